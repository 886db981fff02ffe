import { createHmac, randomBytes } from "node:crypto";
import { expect } from "vitest";
import { AttemptOutcome, Fate } from "../../../gen/waypost/v1/delivery_pb.js";
import { Ordering } from "../../../gen/waypost/v1/destination_pb.js";
import { ManualClock } from "../../../src/clock.js";
import { claimRound, healthConfig } from "../../health/support.js";
import { testWith } from "../../helpers/fixtures.js";
import type { TestServer } from "../../helpers/server.js";
import { startReceiver, type ReceivedRequest, type Receiver } from "../../helpers/receiver.js";
import { completionsOf, nextAttemptOf } from "../../helpers/server.js";
import { verifyStandardWebhook } from "../../helpers/standard-webhooks.js";

// The loop claims only when woken (a new call, a poke): batches fill from the test's calls alone.
const clock = new ManualClock(new Date("2026-11-22T10:00:00Z"));
const receivers: Receiver[] = [];

const test = testWith({ server: { clock, config: healthConfig() } });
test.afterEach(async ({ server }) => {
  await server.waypost.delivery!.settle();
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

async function receiver(respond: (index: number) => number = () => 200) {
  const r = await startReceiver({ respond: (_, index) => ({ status: respond(index) }) });
  receivers.push(r);
  return r;
}

type Batch = { maxCalls: number; maxBytes?: number; maxWaitMs?: number };

async function batchedDestination(server: TestServer, url: string, batch: Batch, extra = {}) {
  const source = await server.createSource();
  const destination = await server.createDestination({ name: "batched", sourceIds: [source.id], webhooks: [{ url, batch }], ...extra });
  return { source, destination, client: server.tracking(source.writeKey) };
}

/** The calls a batch POST carried, as sent. */
const callsIn = (
  request: ReceivedRequest,
): Array<{ messageId: string; userId?: string; event?: string; properties?: Record<string, unknown> }> => JSON.parse(request.body).batch;

/**
 * Resolves once the delivery loop has taken every call stored so far: a
 * batch's wait has begun for each (from its claim per call, from its
 * receipt on the call log), and what is due has gone. Without rules a
 * claimed call reaches its kind within the claim's own turn of the event loop.
 */
const handedOver = (server: TestServer) => server.waypost.delivery!.caughtUp();

/** Moves the clock and lets the loop turn once (its tick sends the batches due by then). */
async function advance(server: TestServer, ms: number) {
  const loop = server.waypost.delivery!;
  const turned = new Promise<void>((resolve) => {
    const off = loop.events.on("claimed", () => {
      off();
      resolve();
    });
  });
  clock.advance(ms);
  loop.poke();
  await turned;
}

/** A call's delivery at the destination, as GetDelivery shows it (found by its message). */
async function deliveryOf(server: TestServer, messageId: string, destinationId: string) {
  const { deliveries } = await server.deliveries.listDeliveries({ destinationId, messageId });
  expect(deliveries).toHaveLength(1);
  return (await server.deliveries.getDelivery({ id: deliveries[0]!.id })).delivery!;
}

/** A call's attempts as the delivery views list them (a batch POST's attempt is one row for the batch). */
async function attemptsOf(server: TestServer, messageId: string, destinationId: string) {
  const delivery = await deliveryOf(server, messageId, destinationId);
  return delivery.attempts.map((a) => ({ outcome: a.outcome, statusCode: a.statusCode }));
}

const success = { outcome: AttemptOutcome.SUCCESS, statusCode: 200 };

test("one POST carries the calls as {batch:[...]}, each the body a single POST carries after the rules; both signatures verify over it", async ({
  server,
}) => {
  const secret = `whsec_${randomBytes(32).toString("base64")}`;
  const [batchReceiver, singleReceiver] = [await receiver(), await receiver()];
  const rules = {
    sharedSecret: "shh",
    signingSecrets: [secret],
    filter: { type: "track" },
    dropFields: ["properties.secret"],
    transform: "function transform(e) { if (e.event === 'Skip') return null; e.properties.shaped = true; return e }",
  };
  const { source, destination } = await batchedDestination(server, batchReceiver.url, { maxCalls: 3, maxWaitMs: 60_000 }, rules);
  // The same rules, one call per POST: what each call of the batch must be, byte for byte.
  await server.createDestination({ name: "single", sourceIds: [source.id], webhooks: [{ url: singleReceiver.url }], ...rules });
  const client = server.tracking(source.writeKey);
  const finished = completionsOf(server, destination.id, 4);
  const track = async (event: string) =>
    (await client.track({ track: { userId: "u", event, properties: { secret: "x", n: 1 } } })).messageId;
  const [a, skipped] = [await track("A"), await track("Skip")];
  const { messageId: identified } = await client.identify({ identify: { userId: "u" } });
  const [b, c] = [await track("B"), await track("C")];
  await finished;

  const [request] = await batchReceiver.waitForRequests(1);
  expect(batchReceiver.requests).toHaveLength(1);
  const calls = callsIn(request!);
  expect(calls.map((call) => call.messageId).sort()).toEqual([a, b, c].sort());
  expect(calls.every((call) => call.properties?.shaped === true && !("secret" in call.properties))).toBe(true);
  const singles = new Map((await singleReceiver.waitForRequests(3)).map((r) => [JSON.parse(r.body).messageId, r.body]));
  expect(request!.body).toBe(`{"batch":[${calls.map((call) => singles.get(call.messageId)).join(",")}]}`);

  expect(request!.headers["content-type"]).toBe("application/json");
  expect(request!.headers["x-signature"]).toBe(createHmac("sha1", "shh").update(request!.body).digest("hex"));
  expect(verifyStandardWebhook(secret, request!, clock.now())).toEqual(JSON.parse(request!.body));
  // A batch is not one message: its webhook-id is its own.
  expect([a, b, c]).not.toContain(request!.headers["webhook-id"]);
  expect(request!.headers.traceparent).toBeUndefined();

  for (const id of [a, b, c]) expect(await attemptsOf(server, id, destination.id)).toEqual([success]);
  // Each call's delivery shows its own body as sent (the rules changed it), not another call's of the batch.
  for (const id of [a, b, c]) expect((await deliveryOf(server, id, destination.id)).body).toBe(singles.get(id));
  // The delivery view shows the headers a batch POST carries, not a single call's.
  const [done] = (await finished).filter((completion) => completion.status === "delivered");
  const { delivery } = await server.deliveries.getDelivery({ id: done!.id });
  expect(delivery!.webhookHeaders[0]!.headers).toMatchObject({
    "webhook-id": "(derived from each batch POST's calls)",
    "x-signature": "[masked]",
  });
  const fateOf = async (messageId: string) =>
    (await server.deliveries.explainMessage({ messageId })).destinations.find((d) => d.destinationId === destination.id);
  expect(await fateOf(skipped)).toMatchObject({ fate: Fate.FILTERED, reason: "transform" });
  expect(await fateOf(identified)).toMatchObject({ fate: Fate.FILTERED, reason: "filter" });
});

test("a 500 retries the whole batch: every call's delivery shows the failed attempt, then the success", async ({ server }) => {
  const r = await receiver((index) => (index === 0 ? 500 : 200));
  const secret = `whsec_${randomBytes(32).toString("base64")}`;
  const { destination, client } = await batchedDestination(server, r.url, { maxCalls: 2, maxWaitMs: 60_000 }, { signingSecrets: [secret] });
  const failed = completionsOf(server, destination.id, 2);
  const x = (await client.track({ track: { userId: "u1", event: "X" } })).messageId;
  const y = (await client.track({ track: { userId: "u2", event: "Y" } })).messageId;
  expect((await failed).map((c) => c.status)).toEqual(["retrying", "retrying"]);
  const failedAttempt = { outcome: AttemptOutcome.RETRYABLE, statusCode: 500 };
  for (const id of [x, y]) expect(await attemptsOf(server, id, destination.id)).toEqual([failedAttempt]);

  clock.set(await nextAttemptOf(server, destination.id));
  const delivered = completionsOf(server, destination.id, 2);
  await claimRound(server);
  expect((await delivered).map((c) => c.status)).toEqual(["delivered", "delivered"]);

  const [first, second] = r.requests;
  expect(r.requests).toHaveLength(2);
  for (const request of [first!, second!])
    expect(
      callsIn(request)
        .map((call) => call.messageId)
        .sort(),
    ).toEqual([x, y].sort());
  // The same calls sent again together: the same webhook-id, so a receiver can drop the repeat.
  expect(second!.headers["webhook-id"]).toBe(first!.headers["webhook-id"]);
  for (const id of [x, y]) {
    expect(await attemptsOf(server, id, destination.id)).toEqual([failedAttempt, success]);
  }
  // Each delivery's attempts say which POST they were and which other call went with it.
  const { deliveries } = await server.deliveries.listDeliveries({ destinationId: destination.id });
  const byMessage = new Map(deliveries.map((d) => [d.messageId, d.id]));
  const { delivery } = await server.deliveries.getDelivery({ id: byMessage.get(x)! });
  const { delivery: other } = await server.deliveries.getDelivery({ id: byMessage.get(y)! });
  expect(delivery!.attempts.map((a) => [a.batchCalls, a.batchDeliveryIds])).toEqual([
    [2, [byMessage.get(y)]],
    [2, [byMessage.get(y)]],
  ]);
  expect(delivery!.attempts.map((a) => a.batchId)).toEqual(other!.attempts.map((a) => a.batchId));
  expect(delivery!.attempts[0]!.batchId).not.toBe(delivery!.attempts[1]!.batchId);
});

test("max_calls: a batch goes as soon as it is full; the rest waits for its time", async ({ server }) => {
  const r = await receiver();
  // Waits shorter than a lease (the clock jumps: the heartbeats do not run in between).
  const { destination, client } = await batchedDestination(server, r.url, { maxCalls: 2, maxWaitMs: 10_000 });
  const full = completionsOf(server, destination.id, 4);
  // A trickle: each call taken before the next comes. (On the call log, a page read with more calls than a batch
  // sends its short last batch with it: docs/job-table.md, "A page, step by step".)
  for (let i = 0; i < 5; i++) {
    await client.track({ track: { userId: `u${i}`, event: `E${i}` } });
    await handedOver(server);
  }
  await full;
  expect(r.requests.map((request) => callsIn(request).length)).toEqual([2, 2]);
  const last = completionsOf(server, destination.id, 1);
  await advance(server, 10_000);
  await last;
  expect(r.requests.map((request) => callsIn(request).length)).toEqual([2, 2, 1]);
});

test("max_wait_ms: the first call of a batch waits that long for more, no longer", async ({ server }) => {
  const r = await receiver();
  const { destination, client } = await batchedDestination(server, r.url, { maxCalls: 10, maxWaitMs: 5_000 });
  const a = (await client.track({ track: { userId: "u", event: "A" } })).messageId;
  await handedOver(server);
  await advance(server, 4_999);
  const b = (await client.track({ track: { userId: "v", event: "B" } })).messageId;
  await handedOver(server);
  const finished = completionsOf(server, destination.id, 2);
  await advance(server, 1);
  await finished;
  // B found A still waiting at 4,999 ms; both went at 5,000 ms.
  expect(r.requests.map((request) => callsIn(request).map((call) => call.messageId))).toEqual([[a, b]]);
});

test("max_bytes: no batch body is larger; a call larger alone goes in a batch of one", async ({ server }) => {
  const r = await receiver();
  const maxBytes = 1024;
  const { client } = await batchedDestination(server, r.url, { maxCalls: 100, maxBytes, maxWaitMs: 60_000 });
  for (let i = 0; i < 7; i++) await client.track({ track: { userId: `u${i}`, event: "Small", properties: { pad: "x".repeat(100) } } });
  const big = (await client.track({ track: { userId: "big", event: "Big", properties: { pad: "x".repeat(2_000) } } })).messageId;
  await handedOver(server);
  await server.waypost.delivery!.settle();

  const batches = r.requests.map(callsIn);
  expect(batches.flat()).toHaveLength(8);
  expect(batches.filter((calls) => calls.length > 1).length).toBeGreaterThan(0);
  for (const request of r.requests) {
    const calls = callsIn(request);
    if (calls.some((call) => call.messageId === big)) expect(calls).toHaveLength(1);
    else expect(Buffer.byteLength(request.body)).toBeLessThanOrEqual(maxBytes);
  }
});

test("per-user ordering: a batch holds at most one call of a user, and a user's calls arrive in order", async ({ server }) => {
  const r = await receiver();
  const { destination, client } = await batchedDestination(server, r.url, { maxCalls: 10, maxWaitMs: 0 }, { ordering: Ordering.PER_USER });
  const delivered = completionsOf(server, destination.id, 5);
  const sent: Array<[string, string]> = [];
  for (const [userId, event] of [
    ["u1", "a"],
    ["u2", "x"],
    ["u1", "b"],
    ["u1", "c"],
    ["u2", "y"],
  ] as const) {
    await client.track({ track: { userId, event } });
    sent.push([userId, event]);
  }
  await delivered;
  const batches = r.requests.map(callsIn);
  for (const calls of batches) expect(new Set(calls.map((call) => call.userId)).size).toBe(calls.length);
  const arrived = (userId: string) =>
    batches
      .flat()
      .filter((call) => call.userId === userId)
      .map((call) => call.event);
  expect(arrived("u1")).toEqual(["a", "b", "c"]);
  expect(arrived("u2")).toEqual(["x", "y"]);
});

test("several URLs: a batched one beside one that is not; a retry goes, batched, only to the URL that failed retryably", async ({
  server,
}) => {
  const [batched, single] = [await receiver((index) => (index === 0 ? 503 : 200)), await receiver(() => 400)];
  const source = await server.createSource();
  const destination = await server.createDestination({
    name: "mixed",
    sourceIds: [source.id],
    webhooks: [{ url: batched.url, batch: { maxCalls: 2, maxWaitMs: 60_000 } }, { url: single.url }],
  });
  const client = server.tracking(source.writeKey);
  const failed = completionsOf(server, destination.id, 2);
  const ids = [(await client.track({ track: { userId: "u1", event: "X" } })).messageId];
  ids.push((await client.track({ track: { userId: "u2", event: "Y" } })).messageId);
  expect((await failed).map((c) => c.status)).toEqual(["retrying", "retrying"]);
  expect(single.requests.map((request) => JSON.parse(request.body).messageId).sort()).toEqual([...ids].sort());

  clock.set(await nextAttemptOf(server, destination.id));
  const delivered = completionsOf(server, destination.id, 2);
  await claimRound(server);
  expect((await delivered).map((c) => c.status)).toEqual(["delivered", "delivered"]);
  expect(batched.requests.map((request) => callsIn(request).length)).toEqual([2, 2]);
  expect(single.requests).toHaveLength(2);
});

test("a permanent answer (410) fails every call of the batch, each with the attempt", async ({ server }) => {
  const r = await receiver(() => 410);
  const { destination, client } = await batchedDestination(server, r.url, { maxCalls: 2, maxWaitMs: 60_000 });
  const finished = completionsOf(server, destination.id, 2);
  const ids = [(await client.track({ track: { userId: "u1", event: "X" } })).messageId];
  ids.push((await client.track({ track: { userId: "u2", event: "Y" } })).messageId);
  expect((await finished).map((c) => c.status)).toEqual(["failed", "failed"]);
  expect(r.requests).toHaveLength(1);
  for (const id of ids)
    expect(await attemptsOf(server, id, destination.id)).toEqual([{ outcome: AttemptOutcome.PERMANENT, statusCode: 410 }]);
});
