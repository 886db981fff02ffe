import { createRequire } from "node:module";
import { Agent } from "undici";
import { afterAll, beforeAll, expect } from "vitest";
import { installCatalogFetch, maskHeaders, maskUrl, type VendorContext, withVendorContext } from "../../src/catalog/catalog-fetch.js";
import { testWith } from "../helpers/fixtures.js";

// The catalog's request client, as its actions use it, with Waypost's fetch
// installed in place of its own (the one place Waypost reaches into the
// catalog): requests go through the given dispatcher and are recorded; a
// dry run sends nothing; outside a context the catalog's own fetch runs.
const require = createRequire(import.meta.url);
const createRequestClient = (
  require("@segment/actions-core") as {
    createRequestClient: (
      ...options: unknown[]
    ) => (url: string, options?: Record<string, unknown>) => Promise<{ status: number; data?: unknown }>;
  }
).createRequestClient;

const test = testWith({
  receiver: {
    respond: () => ({ status: 200, headers: { "content-type": "application/json" }, body: '{"ok":true,"echo":"tok-secret-1234"}' }),
  },
});
let agent: Agent;
let connections = 0;

beforeAll(async () => {
  // One connection per origin: undici frees a connection a tick after its answer's body ends, so with
  // more allowed, a request sent at once after another may open a second one.
  agent = new Agent({ connections: 1 });
  agent.on("connect", () => connections++);
  installCatalogFetch();
  installCatalogFetch(); // idempotent
});
afterAll(async () => {
  await agent?.close();
});

function context(extra: Partial<VendorContext> = {}): VendorContext {
  return { send: (use) => use(agent), secrets: ["tok-secret-1234"], requests: [], now: () => new Date(), ...extra };
}

test("requests go through Waypost's dispatcher (one kept-alive connection), recorded with secrets masked", async ({ receiver }) => {
  const request = createRequestClient({ headers: { authorization: "Bearer tok-secret-1234" } });
  const ctx = context();
  const before = receiver.requests.length;
  const first = await withVendorContext(ctx, () =>
    request(`${receiver.url}?api_key=tok-secret-1234&x=1`, { method: "post", json: { a: 1 } }),
  );
  await withVendorContext(ctx, () => request(`${receiver.url}?api_key=tok-secret-1234&x=2`, { method: "post", json: { a: 2 } }));
  expect(first.status).toBe(200);
  // The catalog's afterResponse hooks ran on the Response it got (a node-fetch Response): data parsed.
  expect(first.data).toEqual({ ok: true, echo: "tok-secret-1234" });
  expect(receiver.requests.length - before).toBe(2);
  expect(receiver.requests[before]!.headers.authorization).toBe("Bearer tok-secret-1234");
  expect(connections).toBe(1);
  expect(ctx.requests).toHaveLength(2);
  const [recorded] = ctx.requests;
  expect(recorded).toMatchObject({ method: "POST", status: 200, body: '{"a":1}' });
  expect(recorded!.url).toBe(`${receiver.url}?api_key=***&x=1`);
  expect(recorded!.headers.authorization).toBe("***");
  expect(recorded!.responseBody).toBe('{"ok":true,"echo":"***"}');
});

test("a dry run records the request and answers 200 {} without sending", async ({ receiver }) => {
  const request = createRequestClient();
  const ctx = context({ dryRun: true, send: undefined });
  const before = receiver.requests.length;
  const response = await withVendorContext(ctx, () => request(`${receiver.url}/dry`, { method: "put", json: { b: 2 } }));
  expect(response.status).toBe(200);
  expect(receiver.requests.length).toBe(before);
  expect(ctx.requests.map((r) => [r.method, r.url, r.body])).toEqual([["PUT", `${receiver.url}/dry`, '{"b":2}']]);
});

test("outside a context the catalog's own fetch runs (nothing recorded)", async ({ receiver }) => {
  const request = createRequestClient();
  const before = receiver.requests.length;
  const connectionsBefore = connections;
  const response = await request(`${receiver.url}/own`, { method: "post", json: {} });
  expect(response.status).toBe(200);
  expect(receiver.requests.length).toBe(before + 1);
  expect(connections).toBe(connectionsBefore);
});

test("masking: query values and headers holding a secret, Authorization always", () => {
  expect(maskUrl("https://api.example/v1?key=abcd1234&n=1", ["abcd1234"])).toBe("https://api.example/v1?key=***&n=1");
  expect(maskUrl("https://api.example/abcd1234/track", ["abcd1234"])).toBe("https://api.example/***/track");
  expect(maskHeaders({ "X-Api-Key": "abcd1234", Authorization: "Basic eA==", Accept: "*/*" }, ["abcd1234"])).toEqual({
    "X-Api-Key": "***",
    Authorization: "***",
    Accept: "*/*",
  });
});

test("a compressed answer inflates no further than the body cap; a secret the action puts in the body is masked where it is recorded", async () => {
  const { createServer } = await import("node:http");
  const { gzipSync } = await import("node:zlib");
  // 64 MB of zeros compress to about 64 KB: inflated whole, it would cost 64 MB of memory per request.
  const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024));
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/octet-stream", "content-encoding": "gzip" }).end(bomb);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as import("node:net").AddressInfo).port;
  const bombAgent = new Agent();
  try {
    const request = createRequestClient();
    const ctx = context({ send: (use) => use(bombAgent) });
    const response = (await withVendorContext(ctx, () =>
      request(`http://127.0.0.1:${port}/bomb`, { method: "post", json: { token: "tok-secret-1234" } }),
    )) as unknown as { status: number; content?: string };
    expect(response.status).toBe(200);
    expect(Buffer.byteLength(response.content ?? "")).toBeLessThanOrEqual(4 * 1024 * 1024);
    expect(ctx.requests[0]!.body).toBe('{"token":"***"}');
  } finally {
    await bombAgent.close();
    server.close();
  }
});
