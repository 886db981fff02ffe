import http from "node:http";
import http2 from "node:http2";
import { gzipSync } from "node:zlib";
import { describe, expect } from "vitest";
import { limits } from "../../src/ingest/limits.js";
import type { RouteHandler } from "../../src/http/types.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";
import { basicAuth, post, storedMessageIds } from "./support.js";

let source: { id: string; writeKey: string };

/** Waiters for the compatible API's handler to finish a request (answered or not). */
let finishWaiters: Array<(outcome: { answered: boolean; status: number }) => void> = [];

const test = testWith({
  server: {
    // The compatible API's route (the second, after the operational routes),
    // wrapped to tell when it finished a request.
    routes: (defaults) => defaults.map((route, index) => (index === 1 ? observeFinish(route) : route)),
  },
});

test.beforeAll(async ({ server, receiver }) => {
  source = await server.createSource();
  await server.createDestination({ name: "hook", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
});

function observeFinish(compat: RouteHandler): RouteHandler {
  return async (req, res, path) => {
    const handled = await compat(req, res, path);
    const waiters = finishWaiters;
    finishWaiters = [];
    for (const resolve of waiters) resolve({ answered: res.headersSent, status: res.statusCode });
    return handled;
  };
}

/** Resolves when the compat handler next finishes a request: proof it did not hang. */
function handlerFinishes(): Promise<{ answered: boolean; status: number }> {
  return new Promise((resolve) => finishWaiters.push(resolve));
}

const track = (messageId: string, extra: Record<string, unknown> = {}) => ({
  type: "track",
  userId: "u1",
  event: "Limits",
  messageId,
  ...extra,
});

/** A JSON batch of exactly `bytes` bytes, every message under the 32 KB call limit. */
function batchOfSize(bytes: number, prefix: string): string {
  const batch = Array.from({ length: Math.floor(bytes / 32_000) }, (_, i) =>
    track(`${prefix}-${i}`, { properties: { pad: "x".repeat(30_000) } }),
  );
  const json = JSON.stringify({ batch });
  if (json.length > bytes) throw new Error("batch too large for the requested size");
  return json + " ".repeat(bytes - json.length);
}

/**
 * Zeros as gzip, 16 MiB per gzip member (~16 KB compressed): 64 members are
 * 1 GiB in ~1 MB. A gzip stream may hold several members; Node inflates all.
 */
function gzipBomb(members = 64): Buffer {
  const member = gzipSync(Buffer.alloc(16 * 1024 * 1024));
  return Buffer.concat(Array.from({ length: members }, () => member));
}

/** Resolves with the answer to an upload that may still be open. */
function answerOf(req: http.ClientRequest): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    req.on("error", reject);
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString()) }));
    });
  });
}

function upload(server: TestServer, headers: Record<string, string | number>): http.ClientRequest {
  return http.request(`${server.url}/v1/batch`, {
    method: "POST",
    headers: { authorization: basicAuth(source.writeKey), "content-type": "application/json", ...headers },
  });
}

async function expectHealthy(server: TestServer, messageId: string) {
  const response = await post(server, "/v1/batch", { batch: [track(messageId)] }, { writeKey: source.writeKey });
  expect(response.status).toBe(200);
  expect(await storedMessageIds(server, source.id)).toContain(messageId);
}

describe("413", () => {
  test("exactly 500 KB is accepted, one byte more is refused", async ({ server }) => {
    const atLimit = await post(server, "/v1/batch", batchOfSize(limits.maxRequestBytes, "at-limit"), { writeKey: source.writeKey });
    expect(atLimit).toMatchObject({ status: 200, json: { success: true } });
    const over = await post(server, "/v1/batch", batchOfSize(limits.maxRequestBytes + 1, "over-limit"), {
      writeKey: source.writeKey,
    });
    expect(over.status).toBe(413);
    expect(over.json).toEqual({
      success: false,
      code: "request_too_large",
      message: "request body is over the limit of 512000 bytes (500 KB), counted after decompression",
    });
    const stored = await storedMessageIds(server, source.id);
    expect(stored).toContain("at-limit-0");
    expect(stored).not.toContain("over-limit-0");
  });

  test("the decompressed size counts: a small gzip body that inflates past 500 KB is refused", async ({ server }) => {
    const body = batchOfSize(limits.maxRequestBytes + 1, "gzip-over");
    const compressed = gzipSync(body);
    expect(compressed.length).toBeLessThan(10_000);
    const response = await post(server, "/v1/batch", compressed, {
      writeKey: source.writeKey,
      headers: { "content-encoding": "gzip" },
    });
    expect(response).toMatchObject({ status: 413, json: { code: "request_too_large" } });
    // The same body at the limit, compressed, is fine.
    const fine = await post(server, "/v1/batch", batchOfSize(limits.maxRequestBytes, "gzip-at"), {
      writeKey: source.writeKey,
      gzip: true,
    });
    expect(fine.status).toBe(200);
  });

  test("a chunked upload (no Content-Length) is cut off at the limit", async ({ server }) => {
    const req = upload(server, {});
    const answer = answerOf(req);
    req.end(batchOfSize(limits.maxRequestBytes + 1, "chunked"));
    expect((await answer).status).toBe(413);
  });

  test("a declared Content-Length over 500 KB is refused before the body is sent", async ({ server }) => {
    const req = upload(server, { "content-length": 50 * 1024 * 1024 });
    const answer = answerOf(req);
    req.write("{");
    // The upload stays open: only an answer given before reading the body can arrive.
    expect(await answer).toMatchObject({ status: 413, json: { code: "request_too_large" } });
    req.destroy();
    await expectHealthy(server, "after-content-length");
  });

  // Sent without Content-Length, or with an honest one under 500 KB, so that only
  // the running count of decompressed bytes can refuse it.
  test.for<[string, number, boolean]>([
    ["1 GiB in ~1 MB, chunked", 64, false],
    ["256 MiB in ~260 KB, with Content-Length", 16, true],
  ])(
    "a gzip bomb (%s) is answered 413 before it is inflated past the limit, and the server stays healthy",
    async ([_name, members, withLength], { server }) => {
      const bomb = gzipBomb(members);
      if (withLength) expect(bomb.length).toBeLessThan(limits.maxRequestBytes);
      const req = upload(server, { "content-encoding": "gzip", ...(withLength ? { "content-length": bomb.length } : {}) });
      const answer = answerOf(req);
      req.write(bomb);
      req.end();
      expect(await answer).toMatchObject({ status: 413, json: { code: "request_too_large" } });
      await expectHealthy(server, `after-bomb-${members}`);
    },
  );

  test.for<[string, number, boolean]>([
    ["chunked", 64, false],
    ["with a Content-Length under 500 KB", 16, true],
  ])(
    "a gzip bomb (%s) is stopped early: the 413 arrives while the upload is still open",
    async ([_name, members, withLength], { server }) => {
      const bomb = gzipBomb(members);
      const req = upload(server, { "content-encoding": "gzip", ...(withLength ? { "content-length": bomb.length } : {}) });
      const answer = answerOf(req);
      // 64 KB of this bomb inflate to 64 MiB; the rest is never sent.
      req.write(bomb.subarray(0, 64 * 1024));
      expect((await answer).status).toBe(413);
      req.destroy();
      await expectHealthy(server, `after-open-bomb-${members}`);
    },
  );
});

describe("408", () => {
  test("a body that stops arriving is a 408 request_too_slow once under the minimum rate, and the connection is closed", async ({
    server,
  }) => {
    const req = upload(server, { "content-length": 300_000 });
    const answer = answerOf(req);
    const closed = new Promise<void>((resolve) => req.on("socket", (socket) => socket.on("close", () => resolve())));
    req.on("error", () => {});
    req.write('{"batch":[');
    expect(await answer).toMatchObject({ status: 408, json: { code: "request_too_slow" } });
    expect((await answer).json.message).toMatch(/slower than 1024 bytes a second/);
    await closed;
    await expectHealthy(server, "after-stalled-body");
  });
});

describe("client disconnects", () => {
  test.for<[string, Record<string, string>, Buffer]>([
    ["plain", {}, Buffer.from('{"batch":[{"type":"track","userId":"u1","event":"Cut"')],
    ["gzip", { "content-encoding": "gzip" }, gzipSync(batchOfSize(200_000, "cut")).subarray(0, 2_000)],
  ])("mid-body (%s) neither crashes the server nor stores anything", async ([_name, headers, partial], { server }) => {
    const finished = handlerFinishes();
    const req = upload(server, { ...headers, "content-length": 300_000 });
    req.on("error", () => {});
    req.write(partial, () => req.destroy());
    // The handler settles (no request left hanging) and answers nobody.
    expect(await finished).toMatchObject({ answered: false });
    await expectHealthy(server, `after-disconnect-${_name}`);
    expect((await storedMessageIds(server, source.id)).some((id) => id.startsWith("cut-"))).toBe(false);
  });
});

test("a client that hangs up right after its body still has its calls stored", async ({ server }) => {
  const finished = handlerFinishes();
  const req = upload(server, {});
  req.on("error", () => {});
  req.end(JSON.stringify({ batch: [track("hung-up-1")] }), () => req.destroy());
  await finished;
  expect(await storedMessageIds(server, source.id)).toContain("hung-up-1");
});

describe("HTTP/2 (h2c)", () => {
  function h2Post(session: http2.ClientHttp2Session, body: Buffer, headers: Record<string, string>) {
    return new Promise<{ status: number; json: any }>((resolve, reject) => {
      const stream = session.request({
        ":method": "POST",
        ":path": "/v1/batch",
        authorization: basicAuth(source.writeKey),
        "content-type": "application/json",
        ...headers,
      });
      let status = 0;
      const chunks: Buffer[] = [];
      stream.on("response", (h) => (status = Number(h[":status"])));
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => resolve({ status, json: JSON.parse(Buffer.concat(chunks).toString() || "null") }));
      stream.on("error", reject);
      stream.end(body);
    });
  }

  test("accepts a batch and refuses a bomb on the same session", async ({ server }) => {
    const session = http2.connect(server.url);
    try {
      const ok = await h2Post(session, Buffer.from(JSON.stringify({ batch: [track("h2-1")] })), {});
      expect(ok).toEqual({ status: 200, json: { success: true } });
      const bombBody = gzipBomb();
      const bomb = await h2Post(session, bombBody, { "content-encoding": "gzip" });
      expect(bomb).toMatchObject({ status: 413, json: { code: "request_too_large" } });
      const after = await h2Post(session, Buffer.from(JSON.stringify({ batch: [track("h2-2")] })), {});
      expect(after.status).toBe(200);
      expect(await storedMessageIds(server, source.id)).toEqual(expect.arrayContaining(["h2-1", "h2-2"]));
    } finally {
      session.close();
    }
  });
});
