import http2 from "node:http2";
import pg from "pg";
import { describe, expect } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import { defaultBodyTiming } from "../../../src/http/request-body.js";
import { limits } from "../../../src/ingest/limits.js";
import { answerOf, hookRows, insertWebhookSource, openUpload, postHook, type TestHookSource } from "../../helpers/hook-sources.js";
import { testWith } from "../../helpers/fixtures.js";
import type { TestServer } from "../../helpers/server.js";

// The rate limit's buckets refill only when the test moves this clock.
const clock = new ManualClock();
const bodyTimeoutMs = 1_000;

const test = testWith({ server: { clock, config: { bodies: { ...defaultBodyTiming, deadlineMs: bodyTimeoutMs }, role: "api" } } });
test.beforeAll(async () => {
  // An api process: it receives and stores, and processes nothing, so a stored request stays
  // pending for the test to look at (processing is test/ingest/hooks/hook-processor.test.ts's).
});

async function metric(server: TestServer, sourceId: string, result: string): Promise<number> {
  const { values } = await server.waypost.metrics.hookRequests.get();
  return values.find((v) => v.labels.source_id === sourceId && v.labels.result === result)?.value ?? 0;
}

describe("accepted", () => {
  test("the request is committed before the answer, with what the processor needs", async ({ server }) => {
    const source = await insertWebhookSource(server);
    const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    const answer = await postHook(`${source.url}?shop=a&x=1`, '{"id":"evt_1","type":"charge.succeeded"}', {
      traceparent,
      tracestate: "vendor=1",
      "x-custom": "kept",
    });
    // Read at once: the row is there when the 200 arrives.
    const rows = await hookRows(server, source.id);
    expect(answer).toMatchObject({ status: 200, text: '{"accepted":true}' });
    expect(answer.headers["content-type"]).toBe("application/json");
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      method: "POST",
      query: "shop=a&x=1",
      content_type: "application/json",
      status: "pending",
      idempotency_key: null,
      traceparent,
      tracestate: "vendor=1",
    });
    expect(rows[0]!.body.toString()).toBe('{"id":"evt_1","type":"charge.succeeded"}');
    expect(rows[0]!.headers["x-custom"]).toBe("kept");
    expect(await metric(server, source.id, "accepted")).toBe(1);
  });

  test("the body is stored byte for byte, whatever its type", async ({ server }) => {
    const source = await insertWebhookSource(server);
    const body = Buffer.from([0, 1, 2, 0xff, 0xfe, 10, 13]);
    const answer = await postHook(source.url, body, { "content-type": "application/octet-stream" });
    expect(answer.status).toBe(200);
    const [row] = await hookRows(server, source.id);
    expect(Buffer.compare(row!.body, body)).toBe(0);
    expect(row!.content_type).toBe("application/octet-stream");
  });

  test("the source's configured response is the answer", async ({ server }) => {
    const source = await insertWebhookSource(server, { response: { status: 202, contentType: "text/plain", body: "thanks" } });
    const answer = await postHook(source.url, "{}");
    expect(answer).toMatchObject({ status: 202, text: "thanks" });
    expect(answer.headers["content-type"]).toBe("text/plain");
  });

  test("credentials and forwarding headers are not stored", async ({ server }) => {
    const source = await insertWebhookSource(server);
    await postHook(source.url, "{}", {
      cookie: "session=secret",
      authorization: "Bearer secret",
      "proxy-authorization": "Basic c2VjcmV0",
      "x-forwarded-for": "10.0.0.1",
      "x-forwarded-proto": "https",
      forwarded: "for=10.0.0.1",
      "x-shopify-topic": "orders/create",
    });
    const [row] = await hookRows(server, source.id);
    const names = Object.keys(row!.headers);
    for (const dropped of ["cookie", "authorization", "proxy-authorization", "x-forwarded-for", "x-forwarded-proto", "forwarded"]) {
      expect(names).not.toContain(dropped);
    }
    expect(row!.headers["x-shopify-topic"]).toBe("orders/create");
    expect(JSON.stringify(row!.headers)).not.toContain("secret");
  });
});

describe("refused before the body is read", () => {
  test("an unknown token is a 404 while the upload is still open, and nothing is stored", async ({ server }) => {
    const before = await metric(server, "", "not_found");
    const req = openUpload(`${server.url}/hooks/${"A".repeat(43)}`, { "content-length": 10 * 1024 * 1024 });
    const answer = answerOf(req);
    req.write("{");
    // Only an answer given without reading the 10 MB body can arrive.
    expect(await answer).toMatchObject({ status: 404, text: '{"accepted":false,"error":"unknown hook"}' });
    req.destroy();
    expect(await metric(server, "", "not_found")).toBe(before + 1);
    const { rows } = await server.pool.query("SELECT count(*)::int AS n FROM hook_requests WHERE body = '{'::bytea");
    expect(rows[0].n).toBe(0);
  });

  test("a malformed token and a bare /hooks are 404 too", async ({ server }) => {
    expect((await postHook(`${server.url}/hooks/not%20a%20token`, "{}")).status).toBe(404);
    expect((await postHook(`${server.url}/hooks`, "{}")).status).toBe(404);
    expect((await postHook(`${server.url}/hooks/a/b`, "{}")).status).toBe(404);
  });

  test("another method is a 405 naming POST", async ({ server }) => {
    const source = await insertWebhookSource(server);
    const answer = await postHook(source.url, "", {}, "PUT");
    expect(answer.status).toBe(405);
    expect(answer.headers.allow).toBe("POST");
    expect(await hookRows(server, source.id)).toHaveLength(0);
  });

  test("a declared Content-Length over 512 KB is a 413 before the body is sent", async ({ server }) => {
    const source = await insertWebhookSource(server);
    const req = openUpload(source.url, { "content-length": 50 * 1024 * 1024 });
    const answer = answerOf(req);
    req.write("{");
    expect((await answer).status).toBe(413);
    req.destroy();
    expect(await hookRows(server, source.id)).toHaveLength(0);
    expect(await metric(server, source.id, "too_large")).toBe(1);
  });

  test("a compressed body is a 415", async ({ server }) => {
    const source = await insertWebhookSource(server);
    const answer = await postHook(source.url, "x", { "content-encoding": "gzip" });
    expect(answer.status).toBe(415);
    expect(await hookRows(server, source.id)).toHaveLength(0);
  });
});

describe("bounded bodies", () => {
  test("exactly 512 KB is accepted", async ({ server }) => {
    const source = await insertWebhookSource(server);
    const answer = await postHook(source.url, Buffer.alloc(limits.maxHookBodyBytes, 0x61));
    expect(answer.status).toBe(200);
    const [row] = await hookRows(server, source.id);
    expect(row!.body.length).toBe(limits.maxHookBodyBytes);
  });

  test("a chunked body (no Content-Length) growing past 512 KB is a 413 while it is still being sent", async ({ server }) => {
    const source = await insertWebhookSource(server);
    const req = openUpload(source.url);
    const answer = answerOf(req);
    let answered = false;
    void answer.then(() => {
      answered = true;
    });
    // Chunks of 64 KB until the answer comes; the upload is never ended.
    let sent = 0;
    while (!answered && sent < 64 * limits.maxHookBodyBytes) {
      await new Promise<void>((resolve) => req.write(Buffer.alloc(64 * 1024, 0x61), () => resolve()));
      sent += 64 * 1024;
    }
    expect((await answer).status).toBe(413);
    expect(JSON.parse((await answer).text).error).toBe("request body is over the limit of 524288 bytes (512 KB)");
    req.destroy();
    expect(await hookRows(server, source.id)).toHaveLength(0);
    expect(await metric(server, source.id, "too_large")).toBe(1);
    // The server still takes requests.
    expect((await postHook(source.url, "{}")).status).toBe(200);
  });

  test("a body that does not finish within the time limit is a 408, and nothing is stored", async ({ server }) => {
    const source = await insertWebhookSource(server);
    const req = openUpload(source.url, { "content-length": 100 });
    const answer = answerOf(req);
    req.write('{"slow":');
    const started = Date.now();
    const result = await answer;
    expect(result.status).toBe(408);
    expect(Date.now() - started).toBeGreaterThanOrEqual(bodyTimeoutMs - 50);
    req.destroy();
    expect(await hookRows(server, source.id)).toHaveLength(0);
    expect(await metric(server, source.id, "timeout")).toBe(1);
  });
});

describe("per-source rate limit", () => {
  test("over maxRequestsPerSecond is a 429 with Retry-After, stored nothing, and refills with time", async ({ server }) => {
    const source = await insertWebhookSource(server, { maxRequestsPerSecond: 2 });
    const other = await insertWebhookSource(server, { maxRequestsPerSecond: 2 });
    expect((await postHook(source.url, '{"n":1}')).status).toBe(200);
    expect((await postHook(source.url, '{"n":2}')).status).toBe(200);
    const refused = await postHook(source.url, '{"n":3}');
    expect(refused.status).toBe(429);
    expect(refused.headers["retry-after"]).toBe("1");
    // Another source has its own bucket.
    expect((await postHook(other.url, "{}")).status).toBe(200);
    expect((await hookRows(server, source.id)).map((r) => r.body.toString())).toEqual(['{"n":1}', '{"n":2}']);
    expect(await metric(server, source.id, "rate_limited")).toBe(1);
    clock.advance(500);
    expect((await postHook(source.url, '{"n":4}')).status).toBe(200);
    expect((await postHook(source.url, '{"n":5}')).status).toBe(429);
  });
});

describe("idempotency", () => {
  async function sendTwice(server: TestServer, source: TestHookSource, body: string, headers: Record<string, string> = {}) {
    const first = await postHook(source.url, body, headers);
    const second = await postHook(source.url, body, headers);
    return { first, second, rows: await hookRows(server, source.id) };
  }

  test("a resend with the same key (a header) gets the same answer and is stored as a duplicate", async ({ server }) => {
    const source = await insertWebhookSource(server, { idempotencyKey: "X-Delivery-Id" });
    const { first, second, rows } = await sendTwice(server, source, '{"a":1}', { "x-delivery-id": "d-1" });
    expect(second).toMatchObject({ status: first.status, text: first.text });
    expect(rows.map((r) => [r.idempotency_key, r.status])).toEqual([
      ["d-1", "pending"],
      ["d-1", "duplicate"],
    ]);
    expect(await metric(server, source.id, "duplicate")).toBe(1);
    // Another key is a new request.
    await postHook(source.url, '{"a":1}', { "x-delivery-id": "d-2" });
    expect((await hookRows(server, source.id)).filter((r) => r.status === "pending")).toHaveLength(2);
  });

  test("a key from a JSON path in the body", async ({ server }) => {
    const source = await insertWebhookSource(server, { idempotencyKey: "$.event.id" });
    const { rows } = await sendTwice(server, source, '{"event":{"id":"evt_9"}}');
    expect(rows.map((r) => [r.idempotency_key, r.status])).toEqual([
      ["evt_9", "pending"],
      ["evt_9", "duplicate"],
    ]);
  });

  test("a key from a JSON path into a form-encoded body: GitHub's payload, or the form's fields", async ({ server }) => {
    const form = { "content-type": "application/x-www-form-urlencoded" };
    const wrapped = await insertWebhookSource(server, { idempotencyKey: "$.event.id" });
    const payload = new URLSearchParams({ payload: '{"event":{"id":"evt_7"}}' }).toString();
    expect((await sendTwice(server, wrapped, payload, form)).rows.map((r) => [r.idempotency_key, r.status])).toEqual([
      ["evt_7", "pending"],
      ["evt_7", "duplicate"],
    ]);
    const fields = await insertWebhookSource(server, { idempotencyKey: "$.MessageSid" });
    expect((await sendTwice(server, fields, "MessageSid=SM1&Body=hi", form)).rows.map((r) => r.idempotency_key)).toEqual(["SM1", "SM1"]);
  });

  test("concurrent resends: exactly one is pending", async ({ server }) => {
    const source = await insertWebhookSource(server, { idempotencyKey: "x-delivery-id" });
    const answers = await Promise.all(Array.from({ length: 8 }, () => postHook(source.url, "{}", { "x-delivery-id": "same" })));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    const rows = await hookRows(server, source.id);
    expect(rows.filter((r) => r.status === "pending")).toHaveLength(1);
    expect(rows.filter((r) => r.status === "duplicate")).toHaveLength(7);
  });
});

describe("verification", () => {
  test("TOKEN: the right bearer token is accepted, a wrong or missing one is a 401 with its reason, storing nothing", async ({
    server,
  }) => {
    const source = await insertWebhookSource(server, { verifier: "token", secret: "s3cret-token" });
    expect((await postHook(source.url, "{}", { authorization: "Bearer s3cret-token" })).status).toBe(200);
    const wrong = await postHook(source.url, '{"bad":1}', { authorization: "Bearer nope" });
    const missing = await postHook(source.url, '{"bad":2}');
    for (const answer of [wrong, missing]) {
      expect(answer.status).toBe(401);
      const { error } = JSON.parse(answer.text);
      expect(error).toMatch(/\S/);
      expect(error).not.toContain("\n");
    }
    const rows = await hookRows(server, source.id);
    expect(rows.map((r) => r.body.toString())).toEqual(["{}"]);
    expect(await metric(server, source.id, "unauthorized")).toBe(2);
  });

  test("TOKEN in a header of the source's choosing: that header is not stored", async ({ server }) => {
    const source = await insertWebhookSource(server, { verifier: "token", secret: "hdr-secret", tokenHeader: "X-Hook-Token" });
    expect((await postHook(source.url, "{}", { "x-hook-token": "hdr-secret" })).status).toBe(200);
    const [row] = await hookRows(server, source.id);
    expect(Object.keys(row!.headers)).not.toContain("x-hook-token");
  });
});

describe("a database that fails", () => {
  test("is a 503 with Retry-After, never a 500", async ({ server }) => {
    const source = await insertWebhookSource(server);
    // Inserts for this source fail, as they would with the database down.
    await server.pool.query(`
      CREATE FUNCTION refuse_hook_insert() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.source_id = '${source.id}' THEN RAISE EXCEPTION 'disk full'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_hook_insert BEFORE INSERT ON hook_requests FOR EACH ROW EXECUTE FUNCTION refuse_hook_insert();`);
    try {
      const answer = await postHook(source.url, "{}");
      expect(answer.status).toBe(503);
      expect(answer.headers["retry-after"]).toBe("5");
      expect(await metric(server, source.id, "unavailable")).toBe(1);
    } finally {
      await server.pool.query("DROP TRIGGER refuse_hook_insert ON hook_requests; DROP FUNCTION refuse_hook_insert()");
    }
    expect((await postHook(source.url, "{}")).status).toBe(200);
  });
});

describe("hostile bodies", () => {
  test("a JSON bomb (500 KB of nesting) with the key in the body is stored and answered like any request", async ({ server }) => {
    const source = await insertWebhookSource(server, { idempotencyKey: "$.a.b" });
    const depth = 250_000;
    const answer = await postHook(source.url, "[".repeat(depth) + "]".repeat(depth));
    expect(answer.status).toBe(200);
    const [row] = await hookRows(server, source.id);
    expect(row!.idempotency_key).toBeNull();
    expect(row!.body.length).toBe(2 * depth);
  });
});

describe("HTTP/2", () => {
  function h2Request(url: string, headers: Record<string, string | number>, body?: string) {
    const { origin, pathname } = new URL(url);
    const session = http2.connect(origin);
    const stream = session.request({ ":method": "POST", ":path": pathname, "content-type": "application/json", ...headers });
    const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
      let status = 0;
      const chunks: Buffer[] = [];
      stream.on("response", (h) => {
        status = Number(h[":status"]);
      });
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => resolve({ status, text: Buffer.concat(chunks).toString() }));
      stream.on("error", reject);
    });
    if (body !== undefined) stream.end(body);
    return { session, stream, answer };
  }

  test("a request is stored and answered; an unknown token is a 404 while the upload is open", async ({ server }) => {
    const source = await insertWebhookSource(server);
    const good = h2Request(source.url, {}, '{"h2":true}');
    expect(await good.answer).toMatchObject({ status: 200, text: '{"accepted":true}' });
    good.session.close();
    const [row] = await hookRows(server, source.id);
    expect(row!.body.toString()).toBe('{"h2":true}');
    expect(Object.keys(row!.headers).some((name) => name.startsWith(":"))).toBe(false);

    const unknown = h2Request(`${server.url}/hooks/${"B".repeat(43)}`, { "content-length": 10 * 1024 * 1024 });
    unknown.stream.write("{");
    expect((await unknown.answer).status).toBe(404);
    unknown.session.destroy();
  });
});

describe("waking the processors", () => {
  test("a stored request is announced on waypost_hooks with its source id, after the commit", async ({ server }) => {
    const listener = new pg.Client({ connectionString: server.database.url });
    await listener.connect();
    try {
      await listener.query("LISTEN waypost_hooks");
      const source = await insertWebhookSource(server);
      const notified = new Promise<string>((resolve) => {
        listener.on("notification", (message) => {
          if (message.payload === source.id) resolve(message.payload);
        });
      });
      expect((await postHook(source.url, "{}")).status).toBe(200);
      expect(await notified).toBe(source.id);
      // The request is visible to whoever is woken.
      const { rows } = await listener.query("SELECT status FROM hook_requests WHERE source_id = $1", [source.id]);
      expect(rows).toEqual([{ status: "pending" }]);
    } finally {
      await listener.end();
    }
  });
});

describe("many at once", () => {
  test("concurrent requests to several sources and unknown tokens each get their own answer and row", async ({ server }) => {
    const sources = [await insertWebhookSource(server), await insertWebhookSource(server), await insertWebhookSource(server)];
    const sends = Array.from({ length: 30 }, (_, i) => {
      const source = sources[i % 4];
      const url = source ? source.url : `${server.url}/hooks/${"C".repeat(42)}${i % 10}`;
      return postHook(url, JSON.stringify({ i })).then((answer) => ({ i, source, status: answer.status }));
    });
    const answers = await Promise.all(sends);
    for (const { source, status } of answers) expect(status).toBe(source ? 200 : 404);
    for (const [index, source] of sources.entries()) {
      const bodies = (await hookRows(server, source.id)).map((r) => JSON.parse(r.body.toString()).i).sort((a, b) => a - b);
      expect(bodies).toEqual(answers.filter((a) => a.i % 4 === index).map((a) => a.i));
    }
  });
});
