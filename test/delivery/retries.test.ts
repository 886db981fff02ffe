import { expect } from "vitest";
import { DeliveryStatus } from "../../gen/waypost/v1/delivery_pb.js";
import { ManualClock } from "../../src/clock.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";
import { startReceiver, type Receiver, type Responder } from "../helpers/receiver.js";

const hour = 3_600_000;
const clock = new ManualClock(new Date("2026-11-22T10:00:00Z"));
const receivers: Receiver[] = [];

const test = testWith({ server: { clock, config: { delivery: { timeoutMs: 5_000 } as never } } });
test.afterEach(async ({ server }) => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
  // Results of this test's deliveries must not reach the next test's waits.
  await server.waypost.delivery!.settle();
});

async function setup(server: TestServer, respond: Responder, webhookCount = 1) {
  const rs: Receiver[] = [];
  for (let i = 0; i < webhookCount; i++) {
    const r = await startReceiver({ respond });
    receivers.push(r);
    rs.push(r);
  }
  const source = await server.createSource();
  const destination = await server.createDestination({ name: "hook", sourceIds: [source.id], webhooks: rs.map((r) => ({ url: r.url })) });
  return { receivers: rs, destination, client: server.tracking(source.writeKey) };
}

async function deliveryOf(server: TestServer, messageId: string) {
  const result = await server.pool.query(
    `SELECT d.id, d.status, d.run_at, d.attempt_count, d.first_attempt_at FROM deliveries d
       JOIN messages m ON m.id = d.message_pk WHERE m.message_id = $1`,
    [messageId],
  );
  return result.rows[0];
}

/** Moves the clock to the delivery's next attempt and lets the loop take it. */
async function runNextAttempt(server: TestServer, messageId: string) {
  const row = await deliveryOf(server, messageId);
  clock.set(new Date(Math.max(row.run_at.getTime(), clock.now().getTime())));
  const done = server.waitForDeliveries(1, ["delivered", "failed", "expired", "retrying"]);
  server.waypost.delivery!.poke();
  return (await done)[0]!;
}

test("5xx, then success: retried after about 10 s", async ({ server }) => {
  const { client } = await setup(server, (_, index) => ({ status: index === 0 ? 503 : 200 }));
  const first = server.waitForDeliveries(1, ["retrying"]);
  const before = clock.now().getTime();
  const { messageId } = await client.track({ track: { userId: "u", event: "E" } });
  expect((await first)[0]!.status).toBe("retrying");
  const row = await deliveryOf(server, messageId);
  expect(row.run_at.getTime() - before).toBeGreaterThanOrEqual(8_000);
  expect(row.run_at.getTime() - before).toBeLessThanOrEqual(10_000);
  expect((await runNextAttempt(server, messageId)).status).toBe("delivered");
  const attempts = await server.deliveries.getDelivery({ id: row.id });
  expect(attempts.delivery?.attempts.map((a) => a.statusCode)).toEqual([503, 200]);
  expect(attempts.delivery?.attemptCount).toBe(2);
});

test("no answer within 5 s counts as retryable", async ({ server }) => {
  const { client } = await setup(server, (_, index) => (index === 0 ? { hang: true } : { status: 200 }));
  const first = server.waitForDeliveries(1, ["retrying"]);
  const { messageId } = await client.track({ track: { userId: "u", event: "slow" } });
  await first;
  const row = await deliveryOf(server, messageId);
  const log = await server.deliveries.getDelivery({ id: row.id });
  expect(log.delivery?.attempts[0]?.error).toContain("5000 ms");
  expect(log.delivery?.attempts[0]?.latencyMs).toBeGreaterThanOrEqual(4_900);
  expect((await runNextAttempt(server, messageId)).status).toBe("delivered");
});

test("Retry-After is honoured", async ({ server }) => {
  const { client } = await setup(server, (_, index) =>
    index === 0 ? { status: 429, headers: { "retry-after": "120" } } : { status: 200 },
  );
  const first = server.waitForDeliveries(1, ["retrying"]);
  const before = clock.now().getTime();
  const { messageId } = await client.track({ track: { userId: "u", event: "E" } });
  await first;
  expect((await deliveryOf(server, messageId)).run_at.getTime() - before).toBe(120_000);
});

test("a retry goes only to the URLs that failed retryably", async ({ server }) => {
  const {
    client,
    receivers: [a, b],
  } = await setup(server, (request) => ({ status: request.path === "/hook" ? 500 : 200 }), 2);
  // Both receivers answer 500 at first; then the first one recovers.
  let aCalls = 0;
  a!.respond = () => ({ status: aCalls++ === 0 ? 500 : 200 });
  b!.respond = () => ({ status: 400 });
  const first = server.waitForDeliveries(1, ["retrying"]);
  const { messageId } = await client.track({ track: { userId: "u", event: "E" } });
  await first;
  expect((await runNextAttempt(server, messageId)).status).toBe("delivered");
  expect(a!.requests).toHaveLength(2);
  expect(b!.requests).toHaveLength(1);
});

test("a failing endpoint expires 4 hours after the first attempt", async ({ server }) => {
  const { client } = await setup(server, () => ({ status: 500 }));
  const first = server.waitForDeliveries(1, ["retrying"]);
  const { messageId } = await client.track({ track: { userId: "u", event: "E" } });
  await first;
  const start = (await deliveryOf(server, messageId)).first_attempt_at.getTime();
  let last: Awaited<ReturnType<typeof runNextAttempt>> | undefined;
  for (let i = 0; i < 50; i++) {
    last = await runNextAttempt(server, messageId);
    if (last.status !== "retrying") break;
  }
  expect(last!.status).toBe("expired");
  const row = await deliveryOf(server, messageId);
  expect(clock.now().getTime() - start).toBeGreaterThanOrEqual(4 * hour);
  expect(clock.now().getTime() - start).toBeLessThan(4 * hour + 60_000);
  // Doubling from 10 s, capped at 30 min, over 4 h: about 14 attempts, not hundreds.
  expect(row.attempt_count).toBeGreaterThan(8);
  expect(row.attempt_count).toBeLessThan(20);
});

test("a fixed URL helps pending retries: settings apply to the next attempt", async ({ server }) => {
  const { client, destination } = await setup(server, () => ({ status: 500 }));
  const fixed = await startReceiver();
  receivers.push(fixed);
  const first = server.waitForDeliveries(1, ["retrying"]);
  const { messageId } = await client.track({ track: { userId: "u", event: "E" } });
  await first;
  await server.destinations.updateDestination({
    destination: { id: destination.id, webhooks: [{ url: fixed.url }] },
    updateMask: { paths: ["webhooks"] },
  });
  expect((await runNextAttempt(server, messageId)).status).toBe("delivered");
  expect(fixed.requests).toHaveLength(1);
});

test("a failed delivery can be replayed", async ({ server }) => {
  const { client } = await setup(server, (_, index) => ({ status: index === 0 ? 410 : 200 }));
  const first = server.waitForDeliveries(1);
  const { messageId } = await client.track({ track: { userId: "u", event: "E" } });
  expect((await first)[0]!.status).toBe("failed");
  const row = await deliveryOf(server, messageId);
  const replayed = server.waitForDeliveries(1);
  const { delivery } = await server.deliveries.retryDelivery({ id: row.id });
  expect(delivery?.status).toBe(DeliveryStatus.RETRYING);
  expect((await replayed)[0]!.status).toBe("delivered");
});

test("disabling pauses pending deliveries, enabling resumes them, deleting cancels them", async ({ server }) => {
  const {
    client,
    destination,
    receivers: [r],
  } = await setup(server, () => ({ status: 200 }));
  await server.destinations.updateDestination({ destination: { id: destination.id, enabled: false }, updateMask: { paths: ["enabled"] } });
  // Calls received while it is off are not forwarded later.
  const { messageId: whileOff } = await client.track({ track: { userId: "u", event: "while off" } });
  expect(await deliveryOf(server, whileOff)).toBeUndefined();
  // Deliveries queued before it was turned off wait.
  const { messageId: queued } = await server.tracking((await server.createSource()).writeKey).track({ track: { userId: "u", event: "E" } });
  expect(queued).toBeTruthy();
  await server.pool.query(
    `INSERT INTO delivery_queue (destination_id, message_pk, source_id, run_at, created_at)
     SELECT $1, id, source_id, $2, $2 FROM messages WHERE message_id = $3`,
    [destination.id, clock.now(), queued],
  );
  // A call to an enabled destination, stored after that delivery: once the
  // loop has delivered it, a claim has run that could have taken the paused one.
  const control = await startReceiver();
  receivers.push(control);
  const other = await server.createSource();
  await server.createDestination({ name: "control", sourceIds: [other.id], webhooks: [{ url: control.url }] });
  const controlDone = server.waitForDeliveries(1);
  await server.tracking(other.writeKey).track({ track: { userId: "u", event: "control" } });
  server.waypost.delivery!.poke();
  expect((await controlDone)[0]!.status).toBe("delivered");
  const pending = await deliveryOf(server, queued);
  expect(pending.status).toBe("pending");
  expect(pending.attempt_count).toBe(0);
  const resumed = server.waitForDeliveries(1);
  await server.destinations.updateDestination({ destination: { id: destination.id, enabled: true }, updateMask: { paths: ["enabled"] } });
  server.waypost.delivery!.poke();
  expect((await resumed)[0]!.status).toBe("delivered");
  expect(r!.requests.map((q) => JSON.parse(q.body).messageId)).toEqual([queued]);

  await server.destinations.updateDestination({ destination: { id: destination.id, enabled: false }, updateMask: { paths: ["enabled"] } });
  // Back to waiting (as if never sent), to see the deletion cancel it.
  await server.pool.query(
    `WITH h AS (DELETE FROM delivery_history WHERE id = $1 RETURNING *)
     INSERT INTO delivery_queue (destination_id, id, message_pk, source_id, run_at, created_at)
     SELECT destination_id, id, message_pk, source_id, created_at, created_at FROM h`,
    [pending.id],
  );
  await server.destinations.deleteDestination({ id: destination.id });
  expect((await deliveryOf(server, queued)).status).toBe("cancelled");
});

test("paused deliveries still expire at the retry deadline", async ({ server }) => {
  const { client, destination } = await setup(server, () => ({ status: 500 }));
  const first = server.waitForDeliveries(1, ["retrying"]);
  const { messageId } = await client.track({ track: { userId: "u", event: "E" } });
  await first;
  await server.destinations.updateDestination({ destination: { id: destination.id, enabled: false }, updateMask: { paths: ["enabled"] } });
  clock.advance(4 * hour + 1_000);
  const { expired } = await server.waypost.maintenance!.runOnce();
  expect(expired).toBeGreaterThanOrEqual(1);
  expect((await deliveryOf(server, messageId)).status).toBe("expired");
});

test("a delivery cancelled while its request is in flight stays cancelled", async ({ server }) => {
  let release: () => void = () => {};
  const answer = new Promise<void>((resolve) => (release = resolve));
  const {
    client,
    destination,
    receivers: [r],
  } = await setup(server, () => ({ status: 200, after: answer }));
  const { messageId } = await client.track({ track: { userId: "u", event: "E" } });
  await r!.waitForRequests(1);
  await server.destinations.deleteDestination({ id: destination.id });
  const stale = new Promise((resolve) => server.waypost.delivery!.events.once("stale", resolve));
  release();
  await stale;
  expect((await deliveryOf(server, messageId)).status).toBe("cancelled");
});
