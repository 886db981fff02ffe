import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

/**
 * CORS over real HTTP: the tracking API (TrackingService and /v1/*) answers
 * preflights for any origin, or only the configured ones; admin RPCs and
 * other paths never get CORS headers and their preflights are refused.
 */
const page = "http://127.0.0.1:4173";

function preflight(
  server: TestServer,
  path: string,
  origin: string,
  method = "POST",
  requestedHeaders = "authorization,content-type,connect-protocol-version",
) {
  return fetch(`${server.url}${path}`, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": method, "access-control-request-headers": requestedHeaders },
  });
}

function allowedHeaders(response: Response): string[] {
  return (response.headers.get("access-control-allow-headers") ?? "").toLowerCase().split(", ");
}

function track(server: TestServer, writeKey: string, origin: string) {
  return fetch(`${server.url}/waypost.v1.TrackingService/Track`, {
    method: "POST",
    headers: { origin, "content-type": "application/json", authorization: `Bearer ${writeKey}` },
    body: JSON.stringify({ track: { userId: "u1", event: "From a page" } }),
  });
}

function corsHeaders(response: Response): string[] {
  const names: string[] = [];
  response.headers.forEach((_value, name) => {
    if (name.startsWith("access-control-")) names.push(name);
  });
  return names.sort();
}

describe("with the default (any origin)", () => {
  let server: TestServer;
  let writeKey: string;
  beforeAll(async () => {
    server = await startTestServer();
    ({ writeKey } = await server.createSource("cors"));
  });
  afterAll(async () => {
    await server?.stop();
  });

  it.each(["/waypost.v1.TrackingService/Batch", "/waypost.v1.TrackingService/Track", "/v1/batch", "/v1/track"])(
    "answers the preflight of %s: POST, the Connect headers, a max age",
    async (path) => {
      const response = await preflight(server, path, page);
      expect(response.status).toBe(204);
      expect(response.headers.get("access-control-allow-origin")).toBe("*");
      expect(response.headers.get("access-control-allow-methods")).toBe("POST");
      const headers = response.headers.get("access-control-allow-headers")!.toLowerCase().split(", ");
      for (const name of [
        "authorization",
        "content-type",
        "connect-protocol-version",
        "connect-timeout-ms",
        "x-user-agent",
        "content-encoding",
      ]) {
        expect(headers).toContain(name);
      }
      expect(Number(response.headers.get("access-control-max-age"))).toBeGreaterThan(0);
    },
  );

  it.each(["/v1/t", "/v1/b", "/waypost.v1.TrackingService/Track"])(
    "allows whatever headers the preflight of %s asks for, with Vary: Access-Control-Request-Headers",
    async (path) => {
      // What @segment/analytics-next asks for on a retry, and an SDK's own header.
      const response = await preflight(server, path, page, "POST", "authorization,x-retry-count,x-shop-build");
      expect(response.status).toBe(204);
      const headers = allowedHeaders(response);
      for (const name of ["authorization", "x-retry-count", "x-shop-build", "connect-protocol-version"]) expect(headers).toContain(name);
      expect(headers.filter((name) => name === "authorization")).toHaveLength(1);
      expect(response.headers.get("vary")).toMatch(/Access-Control-Request-Headers/);
    },
  );

  it.each([
    ["a name that is not a token", "authorization, x bad", /"x bad" is not a header name/],
    ["a list over 1024 characters", `x-${"a".repeat(1030)}`, /over the limit of 1024/],
    ["more than 32 names", Array.from({ length: 33 }, (_, i) => `x-h${i}`).join(","), /33 headers, over the limit of 32/],
  ])("refuses a preflight asking for %s, saying why", async (_what, requested, why) => {
    const response = await preflight(server, "/v1/t", page, "POST", requested);
    expect(response.status).toBe(403);
    expect(corsHeaders(response)).toEqual([]);
    expect(((await response.json()) as { error: string }).error).toMatch(why);
  });

  it("the actual request gets the allow-origin and exposed headers, and is stored", async () => {
    const response = await track(server, writeKey, page);
    expect(response.status).toBe(200);
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(response.headers.get("access-control-expose-headers")).toMatch(/Retry-After/);
    expect(((await response.json()) as { messageId: string }).messageId).not.toBe("");
  });

  it("an error answer carries the headers too, so the page can read it", async () => {
    const response = await track(server, "wk_wrong", page);
    expect(response.status).toBe(401);
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
  });

  it("refuses a preflight for another method", async () => {
    const response = await preflight(server, "/v1/batch", page, "DELETE");
    expect(response.status).toBe(403);
    expect(corsHeaders(response)).toEqual([]);
  });

  it.each(["/waypost.v1.SourceService/ListSources", "/waypost.v1.DestinationService/CreateDestination", "/console/", "/metrics"])(
    "never opens %s: the preflight is refused, a request gets no CORS header",
    async (path) => {
      const response = await preflight(server, path, page, "POST", "authorization,content-type,x-retry-count");
      expect(response.status).toBe(403);
      expect(corsHeaders(response)).toEqual([]);
      expect(((await response.json()) as { error: string }).error).toMatch(/not open to other origins/);
      const actual = await fetch(`${server.url}${path}`, {
        method: "POST",
        headers: { origin: page, "content-type": "application/json", authorization: `Bearer ${server.adminToken}` },
        body: "{}",
      });
      expect(corsHeaders(actual)).toEqual([]);
    },
  );

  it("(control) a request without Origin gets no CORS headers", async () => {
    const response = await fetch(`${server.url}/waypost.v1.TrackingService/Track`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${writeKey}` },
      body: JSON.stringify({ track: { userId: "u1", event: "Server side" } }),
    });
    expect(response.status).toBe(200);
    expect(corsHeaders(response)).toEqual([]);
  });
});

describe("narrowed by WAYPOST_CORS_ORIGINS", () => {
  let server: TestServer;
  let writeKey: string;
  const allowed = "https://shop.example.com";
  beforeAll(async () => {
    const { corsOrigins } = loadConfig({ WAYPOST_CORS_ORIGINS: `${allowed}, ${page}` });
    server = await startTestServer({ config: { corsOrigins } });
    ({ writeKey } = await server.createSource("cors"));
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("echoes an allowed origin and the requested headers, with Vary: Origin and Access-Control-Request-Headers", async () => {
    const response = await preflight(server, "/v1/batch", allowed, "POST", "authorization,x-retry-count");
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe(allowed);
    expect(allowedHeaders(response)).toContain("x-retry-count");
    expect(response.headers.get("vary")).toBe("Origin, Access-Control-Request-Headers");
    const actual = await track(server, writeKey, page);
    expect(actual.headers.get("access-control-allow-origin")).toBe(page);
  });

  it("on /v1/*, answers an allowed origin with that origin and another origin with no CORS header", async () => {
    // A simple request (text/plain, key in the body) needs no preflight, so
    // only the answer's headers decide whether the page may read it.
    const send = (origin: string) =>
      fetch(`${server.url}/v1/t`, {
        method: "POST",
        headers: { origin, "content-type": "text/plain" },
        body: JSON.stringify({ writeKey, userId: "u1", event: "Simple Request" }),
      });
    const fromAllowed = await send(allowed);
    expect(fromAllowed.status).toBe(200);
    expect(fromAllowed.headers.get("access-control-allow-origin")).toBe(allowed);
    const fromOther = await send("https://evil.example");
    expect(corsHeaders(fromOther)).toEqual([]);
  });

  it("refuses another origin's preflight and gives its requests no CORS header", async () => {
    const response = await preflight(server, "/waypost.v1.TrackingService/Batch", "https://evil.example");
    expect(response.status).toBe(403);
    expect(((await response.json()) as { error: string }).error).toMatch(/https:\/\/evil\.example is not in WAYPOST_CORS_ORIGINS/);
    const actual = await track(server, writeKey, "https://evil.example");
    expect(corsHeaders(actual)).toEqual([]);
  });
});

describe("WAYPOST_CORS_ORIGINS", () => {
  it("is any origin when unset, empty or *", () => {
    for (const value of [undefined, "", "*"]) expect(loadConfig({ WAYPOST_CORS_ORIGINS: value }).corsOrigins).toBeUndefined();
  });

  it("takes a comma list of origins", () => {
    expect(loadConfig({ WAYPOST_CORS_ORIGINS: "https://a.example, http://127.0.0.1:3000" }).corsOrigins).toEqual([
      "https://a.example",
      "http://127.0.0.1:3000",
    ]);
  });

  it.each(["https://a.example/", "a.example", "https://a.example/path", "ftp://a.example", "https://a.example:443"])(
    "refuses %s, naming the variable",
    (value) => {
      expect(() => loadConfig({ WAYPOST_CORS_ORIGINS: value })).toThrow(ConfigError);
      expect(() => loadConfig({ WAYPOST_CORS_ORIGINS: value })).toThrow(/WAYPOST_CORS_ORIGINS/);
    },
  );
});
