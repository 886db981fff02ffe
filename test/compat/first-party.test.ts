import { readdirSync } from "node:fs";
import { describe, expect } from "vitest";
import { analyticsNextPackage } from "../../src/compat/analytics-js-bundle.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";

// First-party collection over real HTTP: the settings, the bundle and its
// chunks (caching, ETags, compression), and the anonymous-id cookie's
// answers to good and bad requests.
const test = testWith();
let writeKey: string;

test.beforeAll(async ({ server }) => {
  ({ writeKey } = await server.createSource("site"));
});

describe("settings", () => {
  test("point the Segment.io integration at the host asked, with an ETag; an unknown write key is a 404", async ({ server }) => {
    const res = await fetch(`${server.url}/v1/projects/${writeKey}/settings`, { headers: { "x-forwarded-proto": "https" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("public, max-age=60");
    const settings = (await res.json()) as { integrations: Record<string, unknown>; metrics: unknown };
    expect(settings.integrations).toEqual({
      "Segment.io": expect.objectContaining({ apiKey: writeKey, apiHost: `${new URL(server.url).host}/v1`, protocol: "https" }),
    });
    expect(settings.metrics).toEqual({ sampleRate: 0 });
    const again = await fetch(`${server.url}/v1/projects/${writeKey}/settings`, {
      headers: { "x-forwarded-proto": "https", "if-none-match": res.headers.get("etag")! },
    });
    expect(again.status).toBe(304);

    expect((await fetch(`${server.url}/v1/projects/%E0%A4%A/settings`)).status).toBe(404);
    const unknown = await fetch(`${server.url}/v1/projects/nope/settings`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ code: "not_found", message: "no source has this write key" });
  });
});

describe("the bundle", () => {
  test("is the pinned standalone build, gzipped when asked, revalidated by ETag", async ({ server }) => {
    const url = `${server.url}/analytics.js/v1/${writeKey}/analytics.min.js`;
    const res = await fetch(url, { headers: { "accept-encoding": "identity" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("public, max-age=300");
    const text = await res.text();
    expect(text).toContain("data-global-segment-analytics-key");
    expect(text.length).toBeGreaterThan(100_000);
    expect((await fetch(url, { headers: { "if-none-match": `W/${res.headers.get("etag")}` } })).status).toBe(304);
    const head = await fetch(url, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect((await fetch(url, { method: "POST" })).status).toBe(405);
  });

  test("its chunks are served under the public path it sets, immutable; anything else there is a 404", async ({ server }) => {
    const chunk = readdirSync(analyticsNextPackage().umdDirectory).find((name) => /\.bundle\.[0-9a-f]+\.js$/.test(name))!;
    const res = await fetch(`${server.url}/analytics-next/bundles/${chunk}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(res.headers.get("content-encoding")).toBe("gzip");
    expect((await res.text()).length).toBeGreaterThan(0);
    expect((await fetch(`${server.url}/analytics-next/bundles/standalone.js.map`)).status).toBe(404);
    expect((await fetch(`${server.url}/analytics-next/bundles/..%2Fpackage.json`)).status).toBe(404);
  });
});

describe("the anonymous-id cookie", () => {
  const url = (server: TestServer) => `${server.url}/v1/first-party/anonymous-id`;
  const post = (server: TestServer, body: unknown, headers: Record<string, string> = {}) =>
    fetch(url(server), { method: "POST", headers, body: typeof body === "string" ? body : JSON.stringify(body) });

  test("is set with consent (Secure behind https), kept on the next visit, and cleared when consent is withdrawn", async ({ server }) => {
    const consent = { context: { consent: { categoryPreferences: { Analytics: true, Advertising: false } } } };
    const first = await post(server, { anonymousId: "a-1", ...consent }, { "x-forwarded-proto": "https" });
    expect(await first.json()).toEqual({ anonymousId: "a-1", cookie: true });
    expect(first.headers.get("set-cookie")).toBe("ajs_anonymous_id=a-1; Max-Age=31536000; Path=/; HttpOnly; SameSite=Lax; Secure");
    // The cookie's id wins over a new one the page made.
    const next = await post(server, { anonymousId: "a-2", ...consent }, { cookie: "ajs_anonymous_id=a-1" });
    expect(await next.json()).toEqual({ anonymousId: "a-1", cookie: true });
    const withdrawn = await post(
      server,
      { anonymousId: "a-2", context: { consent: { categoryPreferences: { Analytics: false } } } },
      { cookie: "ajs_anonymous_id=a-1" },
    );
    expect(await withdrawn.json()).toEqual({ anonymousId: "a-2", cookie: false });
    expect(withdrawn.headers.get("set-cookie")).toBe("ajs_anonymous_id=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax");
  });

  test("without a consent object no cookie (one already there stays); with one lacking a named category, the cookie goes", async ({
    server,
  }) => {
    const silent = await post(server, { anonymousId: "b-1" }, { cookie: "ajs_anonymous_id=a-1" });
    expect(await silent.json()).toEqual({ anonymousId: "b-1", cookie: false });
    expect(silent.headers.get("set-cookie")).toBeNull();
    const partial = await post(
      server,
      {
        anonymousId: "b-1",
        context: { consent: { categoryPreferences: { Analytics: true } } },
        consentCategories: ["Analytics", "Functional"],
      },
      { cookie: "ajs_anonymous_id=a-1" },
    );
    expect(await partial.json()).toEqual({ anonymousId: "b-1", cookie: false });
    expect(partial.headers.get("set-cookie")).toMatch(/^ajs_anonymous_id=; Max-Age=0;/);
  });

  test("bad requests are a 4xx naming what is wrong", async ({ server }) => {
    const cases: Array<[unknown, number, string]> = [
      ["{", 400, "the body is not valid JSON"],
      [[], 400, "the body must be a JSON object"],
      [{ anonymousId: "a b" }, 400, "anonymousId must be 1 to 100 letters, digits or _.:-"],
      [{ consentCategories: [] }, 400, "consentCategories must be 1 to 20 category names of 1 to 100 characters"],
      ["x".repeat(5000), 413, ""],
    ];
    for (const [body, status, message] of cases) {
      const res = await post(server, body);
      expect(res.status).toBe(status);
      if (message) expect(((await res.json()) as { message: string }).message).toBe(message);
    }
    expect((await fetch(url(server))).status).toBe(405);
  });
});
