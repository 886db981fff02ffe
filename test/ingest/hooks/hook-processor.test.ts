import { expect } from "vitest";
import { requeueHookRequests } from "../../../src/db/queries/hook-requests.js";
import { hookRequestState, hookSettings, insertHookRequest, makeWebhookSource, setHookSettings } from "../../helpers/hook-requests.js";
import { testWith } from "../../helpers/fixtures.js";
import type { TestServer } from "../../helpers/server.js";

const test = testWith();

async function webhookSource(server: TestServer, settings = hookSettings()): Promise<string> {
  const { id } = await server.createSource("hooks");
  await makeWebhookSource(server.pool, id, settings);
  return id;
}

/** Wakes the processor and waits until it has nothing left to do. */
async function processed(server: TestServer, sourceId: string): Promise<void> {
  server.waypost.hooks!.wake(sourceId);
  await server.waypost.hooks!.idle();
}

async function storedCalls(
  server: TestServer,
  sourceId: string,
): Promise<Array<{ message_id: string; payload: Record<string, unknown>; traceparent: string | null }>> {
  const result = await server.pool.query("SELECT message_id, payload, traceparent FROM messages WHERE source_id = $1 ORDER BY id", [
    sourceId,
  ]);
  return result.rows.map((row) => ({ ...row, payload: JSON.parse(row.payload) }));
}

const manyCalls = `
function transform(request) {
  if (request.body.kind === "none") return [];
  if (request.body.kind === "one") return { type: "identify", userId: request.body.user, traits: { plan: request.query.plan } };
  return request.body.items.map(function (item) {
    return { type: "track", userId: request.body.user, event: "Item " + item, properties: { item: item, via: request.headers["x-sender"] } };
  });
}`;

test("a transform makes zero, one or many calls, each stored once with its derived messageId", async ({ server }) => {
  const sourceId = await webhookSource(server, hookSettings({ transform: manyCalls }));
  const none = await insertHookRequest(server.pool, sourceId, { body: { kind: "none" } });
  const one = await insertHookRequest(server.pool, sourceId, { body: { kind: "one", user: "u1" }, query: "plan=pro&x=1&x=2" });
  const many = await insertHookRequest(server.pool, sourceId, {
    body: { kind: "many", user: "u2", items: ["a", "b", "c"] },
    headers: { "x-sender": "shop" },
  });
  await processed(server, sourceId);
  expect(await hookRequestState(server.pool, none)).toMatchObject({ status: "processed", error: null, message_ids: [], attempts: 1 });
  expect(await hookRequestState(server.pool, one)).toMatchObject({ status: "processed", message_ids: [`hook-${one}-0`] });
  expect((await hookRequestState(server.pool, many)).message_ids).toEqual([0, 1, 2].map((i) => `hook-${many}-${i}`));
  const calls = await storedCalls(server, sourceId);
  expect(calls.map((c) => c.message_id)).toEqual([`hook-${one}-0`, ...[0, 1, 2].map((i) => `hook-${many}-${i}`)]);
  expect(calls[0]!.payload).toMatchObject({ type: "identify", userId: "u1", traits: { plan: "pro" } });
  expect(calls[3]!.payload).toMatchObject({ type: "track", event: "Item c", properties: { item: "c", via: "shop" } });
});

test("a call that is not a /v1 call fails its request, naming the call; the next request goes on", async ({ server }) => {
  const sourceId = await webhookSource(
    server,
    hookSettings({
      transform: "function transform(r) { return r.body.e ? [{ type: 'track', userId: 'u', event: r.body.e }] : [{ type: 'bogus' }]; }",
    }),
  );
  const wrongType = await insertHookRequest(server.pool, sourceId, {});
  const good = await insertHookRequest(server.pool, sourceId, { body: { e: "fine" } });
  await processed(server, sourceId);
  expect(await hookRequestState(server.pool, wrongType)).toMatchObject({ status: "failed", message_ids: [], attempts: 1 });
  expect((await hookRequestState(server.pool, wrongType)).error).toMatch(/^call 0: type must be one of/);
  expect(await hookRequestState(server.pool, good)).toMatchObject({ status: "processed", message_ids: [`hook-${good}-0`] });
  expect((await storedCalls(server, sourceId)).map((c) => c.message_id)).toEqual([`hook-${good}-0`]);
});

test("a call without userId or anonymousId is named by its index", async ({ server }) => {
  const sourceId = await webhookSource(
    server,
    hookSettings({
      transform: "function transform(r) { return [{ type: 'track', userId: 'u', event: 'ok' }, { type: 'track', event: 'x' }]; }",
    }),
  );
  const id = await insertHookRequest(server.pool, sourceId, {});
  await processed(server, sourceId);
  expect(await hookRequestState(server.pool, id)).toMatchObject({
    status: "failed",
    error: "call 1: userId or anonymousId is required for track",
    message_ids: [],
  });
  expect(await storedCalls(server, sourceId)).toEqual([]);
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  expect(metrics).toContain(`waypost_hook_requests_processed_total{source_id="${sourceId}",status="failed"} 1`);
});

test("a failing transform, fixed and reprocessed (twice), gives each call exactly once at a webhook destination", async ({
  server,
  receiver,
}) => {
  const sourceId = await webhookSource(server, hookSettings({ transform: "function transform(r) { throw new Error('not ready'); }" }));
  await server.createDestination({ name: "crm", sourceIds: [sourceId], webhooks: [{ url: receiver.url }] });
  const before = receiver.requests.length;
  const ids = [];
  for (const n of [1, 2, 3]) ids.push(await insertHookRequest(server.pool, sourceId, { body: { n } }));
  await processed(server, sourceId);
  for (const id of ids) {
    expect(await hookRequestState(server.pool, id)).toMatchObject({ status: "failed", error: "transform: Error: not ready (line 1)" });
  }
  await setHookSettings(
    server.pool,
    sourceId,
    hookSettings({
      transform: `function transform(r) {
        return [{ type: "track", userId: "u" + r.body.n, event: "First" }, { type: "track", userId: "u" + r.body.n, event: "Second" }];
      }`,
    }),
  );
  const requeue = (includeProcessed: boolean) =>
    requeueHookRequests(server.pool, { sourceId, ids: [], since: undefined, until: new Date(Date.now() + 60_000), includeProcessed });
  expect(await requeue(false)).toBe(3);
  await processed(server, sourceId);
  // Once more, processed ones too: nothing is stored or sent twice.
  expect(await requeue(true)).toBe(3);
  await processed(server, sourceId);
  for (const id of ids) expect(await hookRequestState(server.pool, id)).toMatchObject({ status: "processed", attempts: 3 });
  await receiver.waitForRequests(before + 6);
  const bodies = receiver.requests.slice(before).map((r) => JSON.parse(r.body) as { messageId: string; event: string; userId: string });
  expect(bodies.map((b) => b.messageId).sort()).toEqual(ids.flatMap((id) => [`hook-${id}-0`, `hook-${id}-1`]).sort());
  expect((await storedCalls(server, sourceId)).length).toBe(6);
});

test("without a transform: one track named by the sender, the body as properties, the idempotency key as anonymousId", async ({
  server,
}) => {
  const stripe = await webhookSource(server, hookSettings({ verifier: "stripe" }));
  const github = await webhookSource(server, hookSettings({ verifier: "github" }));
  const shopify = await webhookSource(server, hookSettings({ verifier: "shopify" }));
  const plain = await webhookSource(server, hookSettings({ verifier: "none" }));
  const s = await insertHookRequest(server.pool, stripe, {
    body: { id: "evt_1", type: "payment_intent.succeeded", data: { object: { amount: 100 } } },
    idempotencyKey: "evt_1",
  });
  await insertHookRequest(server.pool, github, {
    body: { action: "closed", number: 7 },
    headers: { "x-github-event": "pull_request", "x-github-delivery": "d-1" },
    idempotencyKey: "d-1",
  });
  await insertHookRequest(server.pool, shopify, { body: { id: 42, total_price: "9.50" }, headers: { "x-shopify-topic": "orders/create" } });
  const p = await insertHookRequest(server.pool, plain, { body: "hello=world", contentType: "application/x-www-form-urlencoded" });
  await processed(server, stripe);
  await processed(server, github);
  await processed(server, shopify);
  await processed(server, plain);
  const [sc] = await storedCalls(server, stripe);
  expect(sc).toMatchObject({
    message_id: `hook-${s}-0`,
    payload: {
      type: "track",
      event: "payment_intent.succeeded",
      anonymousId: "evt_1",
      properties: { id: "evt_1", data: { object: { amount: 100 } } },
    },
  });
  expect((await storedCalls(server, github))[0]!.payload).toMatchObject({
    event: "pull_request",
    anonymousId: "d-1",
    properties: { action: "closed", number: 7 },
  });
  const [shop] = await storedCalls(server, shopify);
  expect(shop!.payload).toMatchObject({ event: "orders/create", properties: { id: 42, total_price: "9.50" } });
  expect((shop!.payload as { anonymousId: string }).anonymousId).toMatch(/^hook-\d+$/);
  expect((await storedCalls(server, plain))[0]!.payload).toMatchObject({
    event: "Webhook Received",
    anonymousId: `hook-${p}`,
    // A form body is read as its fields (GitHub's `payload=<JSON>` as that JSON).
    properties: { hello: "world" },
  });
});

test("requests become calls in order of receipt, with the request's trace context and receipt time", async ({ server }) => {
  const sourceId = await webhookSource(
    server,
    hookSettings({ transform: "function transform(r) { return { type: 'track', userId: 'u', event: 'E' + r.body.n }; }" }),
  );
  const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  const receivedAt = new Date("2026-11-20T10:00:00.000Z");
  const ids: string[] = [];
  for (let n = 0; n < 120; n++) {
    ids.push(await insertHookRequest(server.pool, sourceId, { body: { n }, ...(n === 5 ? { traceparent, receivedAt } : {}) }));
  }
  await processed(server, sourceId);
  const calls = await storedCalls(server, sourceId);
  expect(calls.map((c) => c.payload.event)).toEqual(ids.map((_, n) => `E${n}`));
  expect(calls[5]).toMatchObject({ traceparent, payload: { timestamp: receivedAt.toISOString() } });
  expect(calls[6]!.traceparent).toBe(null);
});

test("hostile requests and transforms fail their request with a clear error, and the source goes on", async ({ server }) => {
  const plain = await webhookSource(server, hookSettings());
  const deep = await insertHookRequest(server.pool, plain, { body: `${"[".repeat(100_000)}${"]".repeat(100_000)}` });
  const nested = await insertHookRequest(server.pool, plain, { body: `${'{"a":'.repeat(70)}1${"}".repeat(70)}` });
  const after = await insertHookRequest(server.pool, plain, { body: { fine: true } });
  await processed(server, plain);
  expect((await hookRequestState(server.pool, deep)).error).toBe("call 0: properties is nested deeper than 64 levels");
  expect((await hookRequestState(server.pool, nested)).error).toBe("call 0: properties is nested deeper than 64 levels");
  expect((await hookRequestState(server.pool, after)).status).toBe("processed");

  const looping = await webhookSource(
    server,
    hookSettings({
      transform: "function transform(r) { if (r.body.loop) { for (;;) {} } return { type: 'track', anonymousId: 'a', event: 'E' }; }",
    }),
  );
  const loop = await insertHookRequest(server.pool, looping, { body: { loop: true } });
  const ok = await insertHookRequest(server.pool, looping, { body: {} });
  await processed(server, looping);
  expect(await hookRequestState(server.pool, loop)).toMatchObject({
    status: "failed",
    error: expect.stringMatching(/^transform: ran longer than 50 ms( of CPU time$| \(5000 ms of wall time)/),
  });
  expect((await hookRequestState(server.pool, ok)).status).toBe("processed");
});

test("a transform's calls together may pass one call's 32 KB (up to what one /v1 batch carries)", async ({ server }) => {
  const sourceId = await webhookSource(
    server,
    hookSettings({
      transform: `function transform(r) {
        var calls = [];
        for (var i = 0; i < 50; i++) calls.push({ type: "track", anonymousId: "a", event: "Line", properties: { i: i, text: new Array(2001).join("x") } });
        return calls;
      }`,
    }),
  );
  const id = await insertHookRequest(server.pool, sourceId, {});
  await processed(server, sourceId);
  const state = await hookRequestState(server.pool, id);
  expect(state).toMatchObject({ status: "processed", error: null });
  expect(state.message_ids).toHaveLength(50);
});

test("the default mapping carries the largest body the inbound URL accepts; a call over 528 KB fails naming the limit", async ({
  server,
}) => {
  const plain = await webhookSource(server, hookSettings());
  // 512 KB as sent, whitespace and all: the call holds it re-serialised.
  const items = Array.from({ length: 4_000 }, (_, i) => ({ i, text: "y".repeat(80) }));
  const body = JSON.stringify({ items }, null, 1);
  const padded = `${body}${" ".repeat(512 * 1024 - Buffer.byteLength(body))}`;
  expect(Buffer.byteLength(padded)).toBe(512 * 1024);
  const large = await insertHookRequest(server.pool, plain, { body: padded });
  await processed(server, plain);
  expect(await hookRequestState(server.pool, large)).toMatchObject({ status: "processed", error: null });
  const [stored] = await storedCalls(server, plain);
  expect((stored!.payload.properties as { items: unknown[] }).items).toEqual(items);

  // A form of 260,000 empty values of one key grows to about 790 KB as JSON.
  const form = await insertHookRequest(server.pool, plain, {
    body: "a&".repeat(256 * 1024),
    contentType: "application/x-www-form-urlencoded",
  });
  await processed(server, plain);
  expect((await hookRequestState(server.pool, form)).error).toMatch(
    /^call 0: message is \d+ bytes, over the limit of 540672 bytes \(528 KB\) per call$/,
  );
});
