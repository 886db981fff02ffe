import { randomUUID } from "node:crypto";
import { afterAll, expect } from "vitest";
import { ManualClock } from "../../../../src/clock.js";
import { defaultCircuitConfig, defaultRetrySchedule, type DeliveryConfig } from "../../../../src/config.js";
import { claimDeliveries, completeDeliveries, type ClaimedDelivery } from "../../../../src/db/job-table/index.js";
import type { Pool } from "../../../../src/db/pool.js";
import { selectAttempts } from "../../../../src/db/queries/deliveries.js";
import { succeededParts } from "../../../../src/db/queries/succeeded-parts.js";
import { storeMessages } from "../../../../src/db/job-table/store-messages.js";
import { decideCompletion } from "../../../../src/delivery/completion.js";
import { createDestinationDispatchers, type DestinationDispatchers } from "../../../../src/delivery/destination-dispatchers.js";
import { createIntegrationDelivery, type IntegrationDestination } from "../../../../src/delivery/kinds/integration/delivery.js";
import type { IntegrationSubscriptionSettings } from "../../../../src/catalog/integration-settings.js";
import { createLogger } from "../../../../src/logger.js";
import { createAddressGuard } from "../../../../src/outbound/address-guard.js";
import { tracingOff } from "../../../../src/tracing/tracing.js";
import { testWith } from "../../../helpers/fixtures.js";
import { seedSourceAndDestination } from "../../../helpers/job-table-fixtures.js";

// The integration kind's delivery half with the catalog's own Webhook entry
// (its `send` action, with a batch form) against a loopback receiver: its URL
// is a mapping field, so no proxy is needed. Real Postgres for the job table
// (claims, completions, the attempts a retry reads), real sockets.
const t0 = new Date("2026-11-28T10:00:00Z");
let dispatchers: DestinationDispatchers;
/** The receiver's origin: it answers any path. */
let base: string;

const test = testWith();
test.beforeAll(async ({ pool, receiver }) => {
  await pool.query("SELECT waypost_create_day_partitions('2026-11-28'::date, '2026-11-30'::date)");
  base = receiver.url.replace(/\/hook$/, "");
});
test.afterEach(({ receiver }) => {
  receiver.respond = () => ({ status: 200, body: "ok" });
});
afterAll(async () => {
  await dispatchers?.close();
});

const config: DeliveryConfig = {
  concurrency: 16,
  perDestinationConcurrency: 8,
  leaseMs: 60_000,
  pollIntervalMs: 1_000,
  timeoutMs: 5_000,
  pipelining: 1,
  shutdownTimeoutMs: 1_000,
  retry: defaultRetrySchedule,
  allowPrivateDestinations: true,
  allowedCidrs: [],
  circuit: defaultCircuitConfig,
  integrationFlushMs: 1_000,
};

function kind(pool: Pool, clock: ManualClock) {
  const guard = createAddressGuard({ allowPrivate: true, allowedCidrs: [] });
  dispatchers ??= createDestinationDispatchers({ guard, timeoutMs: 5_000, pipelining: 1, connectionsPerOrigin: 4 });
  return createIntegrationDelivery({
    pool,
    config,
    clock,
    logger: createLogger("silent"),
    guard,
    tracing: tracingOff,
    http: (id, send) => dispatchers.use(id, send),
  });
}

function destination(
  id: string,
  subscriptions: IntegrationSubscriptionSettings[],
  settings: Record<string, unknown> = {},
): IntegrationDestination {
  return {
    id,
    name: "integration",
    enabled: true,
    ordering: "none",
    revision: 1,
    drop_fields: [],
    transform: "",
    add_profile_id: false,
    kind: "integration",
    integration: { slug: "webhook", settings, subscriptions },
  };
}

function sendTo(name: string, subscribe: string, path: string, extra: Record<string, unknown> = {}): IntegrationSubscriptionSettings {
  return { name, subscribe, action: "send", mapping: { url: `${base}${path}`, ...extra }, enabled: true };
}

async function store(pool: Pool, sourceId: string, calls: Array<Record<string, unknown>>): Promise<void> {
  await storeMessages(
    pool,
    sourceId,
    t0,
    calls.map((call) => {
      const messageId = randomUUID();
      const payload = { type: "track", userId: "u1", messageId, timestamp: t0.toISOString(), context: {}, ...call };
      return { messageId, type: String(payload.type), userId: "u1", payload: JSON.stringify(payload), integrations: undefined };
    }),
  );
}

async function claim(pool: Pool, destinationId: string, now: Date): Promise<ClaimedDelivery[]> {
  const claimed = await claimDeliveries(pool, { now, limit: 50, perDestinationLimit: 50, room: new Map(), leaseMs: 60_000, owner: "w" });
  return claimed.deliveries.filter((d) => d.destinationId === destinationId).sort((a, b) => Number(a.id) - Number(b.id));
}

/** What the runtime hands the kind on a retry: the subscriptions (parts) that succeeded before. */
async function earlierOf(pool: Pool, job: ClaimedDelivery) {
  return job.attemptCount > 0 ? { succeededParts: await succeededParts(pool, job.destinationId, job.id) } : undefined;
}

/** Delivers each claimed call as the loop does, and writes the completions. */
async function deliverAll(
  pool: Pool,
  k: ReturnType<typeof kind>,
  dest: IntegrationDestination,
  jobs: ClaimedDelivery[],
  now: Date,
  flush = false,
) {
  const pending = jobs.map(async (job) => ({ job, results: await k.deliver(job, dest, job.payload, await earlierOf(pool, job)) }));
  if (flush) k.flush?.();
  const done = await Promise.all(pending);
  const completions = done.map(({ job, results }) => decideCompletion(job, results, "every-part", now, config.retry, () => 0));
  await completeDeliveries(pool, completions);
  return completions;
}

async function status(pool: Pool, destinationId: string): Promise<string[]> {
  const result = await pool.query<{ status: string }>("SELECT status::text FROM deliveries WHERE destination_id = $1 ORDER BY id", [
    destinationId,
  ]);
  return result.rows.map((r) => r.status);
}

test("a call matching two subscriptions: each action's request is an attempt named by its subscription; delivered", async ({
  receiver,
  pool,
}) => {
  const { sourceId, destinationId } = await seedSourceAndDestination(pool, t0);
  const dest = destination(destinationId, [
    sendTo("Track Calls", 'type = "track"', "/track"),
    sendTo("Orders", 'event = "Order Completed"', "/orders", { method: "PUT" }),
    sendTo("Identify Calls", 'type = "identify"', "/identify"),
  ]);
  await store(pool, sourceId, [{ event: "Order Completed", properties: { total: 12 } }]);
  const before = receiver.requests.length;
  const [completion] = await deliverAll(pool, kind(pool, new ManualClock(t0)), dest, await claim(pool, destinationId, t0), t0);
  expect(completion!.status).toBe("delivered");
  const sent = receiver.requests.slice(before).sort((a, b) => a.path.localeCompare(b.path));
  expect(sent.map((r) => `${r.method} ${r.path}`)).toEqual(["PUT /orders", "POST /track"]);
  const body = JSON.parse(sent[1]!.body) as Record<string, unknown>;
  // The Segment-shaped call, as the action's default `data` mapping (@path $.) reads it.
  expect(body).toMatchObject({ type: "track", event: "Order Completed", properties: { total: 12 }, userId: "u1" });
  expect(body).not.toHaveProperty("version");
  const attempts = await selectAttempts(pool, [destinationId], [completion!.id]);
  expect(attempts.map((a) => [a.subscription, a.method, a.status_code, a.outcome])).toEqual([
    ["Track Calls", "POST", 200, "success"],
    ["Orders", "PUT", 200, "success"],
  ]);
  expect(attempts[0]!.url).toBe(`${base}/track`);
});

test("a 500 on one subscription retries that subscription only; the one that succeeded is not sent again", async ({ receiver, pool }) => {
  const { sourceId, destinationId } = await seedSourceAndDestination(pool, t0);
  const dest = destination(destinationId, [sendTo("Track Calls", 'type = "track"', "/a"), sendTo("Mirror", 'type = "track"', "/b")]);
  await store(pool, sourceId, [{ event: "Signed Up" }]);
  let failB = true;
  receiver.respond = (request) => (request.path === "/b" && failB ? { status: 500, body: "try later" } : { status: 200, body: "ok" });
  const before = receiver.requests.length;
  const k = kind(pool, new ManualClock(t0));
  const [first] = await deliverAll(pool, k, dest, await claim(pool, destinationId, t0), t0);
  expect(first!.status).toBe("retrying");
  expect(
    receiver.requests
      .slice(before)
      .map((r) => r.path)
      .sort(),
  ).toEqual(["/a", "/b"]);

  failB = false;
  const later = new Date(first!.runAt.getTime() + 1);
  const retried = await claim(pool, destinationId, later);
  expect(retried).toHaveLength(1);
  const [second] = await deliverAll(pool, k, dest, retried, later);
  expect(second!.status).toBe("delivered");
  expect(
    receiver.requests
      .slice(before)
      .map((r) => r.path)
      .sort(),
  ).toEqual(["/a", "/b", "/b"]);
  const attempts = await selectAttempts(pool, [destinationId], [second!.id]);
  expect(attempts.map((a) => [a.attempt, a.subscription, a.status_code, a.outcome])).toEqual([
    [1, "Track Calls", 200, "success"],
    [1, "Mirror", 500, "retryable"],
    [2, "Mirror", 200, "success"],
  ]);
  expect(attempts[1]!.error).toContain('subscription "Mirror": 500');
});

test("a 400 fails the call with the vendor's message, named by its subscription", async ({ receiver, pool }) => {
  const { sourceId, destinationId } = await seedSourceAndDestination(pool, t0);
  const dest = destination(destinationId, [sendTo("Track Calls", 'type = "track"', "/bad")]);
  await store(pool, sourceId, [{ event: "Signed Up" }]);
  receiver.respond = () => ({ status: 400, headers: { "content-type": "application/json" }, body: '{"error":"event name too long"}' });
  const [completion] = await deliverAll(pool, kind(pool, new ManualClock(t0)), dest, await claim(pool, destinationId, t0), t0);
  expect(completion!.status).toBe("failed");
  const [attempt] = await selectAttempts(pool, [destinationId], [completion!.id]);
  expect(attempt!.error).toBe('subscription "Track Calls": 400 Bad Request: {"error":"event name too long"}');
  expect(attempt!.response_body).toBe('{"error":"event name too long"}');
  expect(attempt!.outcome).toBe("permanent");
});

test("an action refusing the call before any request: one attempt of its subscription, no method, failed", async ({ pool }) => {
  const { sourceId, destinationId } = await seedSourceAndDestination(pool, t0);
  // `url` must be a URI: the catalog's own validation refuses the payload.
  const dest = destination(destinationId, [
    { name: "Track Calls", subscribe: 'type = "track"', action: "send", mapping: { url: "not a url" }, enabled: true },
  ]);
  await store(pool, sourceId, [{ event: "Signed Up" }]);
  const [completion] = await deliverAll(pool, kind(pool, new ManualClock(t0)), dest, await claim(pool, destinationId, t0), t0);
  expect(completion!.status).toBe("failed");
  const [attempt] = await selectAttempts(pool, [destinationId], [completion!.id]);
  expect(attempt!.subscription).toBe("Track Calls");
  expect(attempt!.method).toBeNull();
  expect(attempt!.status_code).toBeNull();
  expect(attempt!.error).toMatch(/^subscription "Track Calls": URL must be a valid URI/);
});

test("a secret setting is masked in the attempt's URL", async ({ receiver, pool }) => {
  const { sourceId, destinationId } = await seedSourceAndDestination(pool, t0);
  const dest = destination(destinationId, [sendTo("Track Calls", 'type = "track"', "/q?key=s3cr3t-value")], {
    sharedSecret: "s3cr3t-value",
  });
  await store(pool, sourceId, [{ event: "Signed Up" }]);
  const before = receiver.requests.length;
  const [completion] = await deliverAll(pool, kind(pool, new ManualClock(t0)), dest, await claim(pool, destinationId, t0), t0);
  expect(completion!.status).toBe("delivered");
  expect(receiver.requests[before]!.path).toBe("/q?key=s3cr3t-value");
  // The entry signs with the shared secret (X-Signature): sent, never shown.
  expect(receiver.requests[before]!.headers["x-signature"]).toMatch(/^[0-9a-f]{40}$/);
  const [attempt] = await selectAttempts(pool, [destinationId], [completion!.id]);
  expect(attempt!.url).not.toContain("s3cr3t-value");
  expect(attempt!.url).toContain("key=");
});

test("a batch subscription: N calls go as the catalog's batch requests; a per-item failure fails that call only", async ({
  receiver,
  pool,
}) => {
  const { sourceId, destinationId } = await seedSourceAndDestination(pool, t0);
  const dest = destination(destinationId, [
    sendTo("Batched", 'type = "track"', "/batch", { enable_batching: true, batch_size: 3, method: { "@path": "$.properties.method" } }),
  ]);
  // The third has no method: the catalog's validation refuses that item alone.
  await store(pool, sourceId, [
    { event: "One", properties: { method: "POST" } },
    { event: "Two", properties: { method: "POST" } },
    { event: "Three", properties: {} },
    { event: "Four", properties: { method: "POST" } },
  ]);
  const before = receiver.requests.length;
  const clock = new ManualClock(t0);
  const k = kind(pool, clock);
  const jobs = await claim(pool, destinationId, t0);
  expect(jobs).toHaveLength(4);
  expect(k.inFlightLimit?.(dest)).toBeGreaterThanOrEqual(3);
  const pending = jobs.map(async (job) => ({ job, results: await k.deliver(job, dest, job.payload) }));
  // Three fill the first batch; the fourth waits for the flush interval, by the clock.
  await receiver.waitForRequests(before + 1);
  clock.advance(1_000);
  k.tick?.();
  const done = await Promise.all(pending);
  const completions = done.map(({ job, results }) => decideCompletion(job, results, "every-part", t0, config.retry, () => 0));
  await completeDeliveries(pool, completions);
  const sent = receiver.requests.slice(before);
  expect(sent).toHaveLength(2);
  expect((JSON.parse(sent[0]!.body) as Array<{ event: string }>).map((e) => e.event)).toEqual(["One", "Two"]);
  expect((JSON.parse(sent[1]!.body) as Array<{ event: string }>).map((e) => e.event)).toEqual(["Four"]);
  expect(await status(pool, destinationId)).toEqual(["delivered", "delivered", "failed", "delivered"]);
  const attempts = await selectAttempts(
    pool,
    jobs.map(() => destinationId),
    jobs.map((j) => j.id),
  );
  const byCall = new Map(attempts.map((a) => [a.delivery_id, a]));
  expect(byCall.get(jobs[0]!.id)).toMatchObject({ subscription: "Batched", method: "POST", status_code: 200, outcome: "success" });
  // Refused by the catalog's validation, it was in no request: an attempt of its own, no method.
  expect(byCall.get(jobs[2]!.id)).toMatchObject({ subscription: "Batched", method: null, status_code: null, outcome: "permanent" });
  expect(byCall.get(jobs[2]!.id)?.error).toMatch(/^subscription "Batched": .*method/);
  // The calls of one batch request share its batch attempt row.
  const rows = await pool.query<{ calls: number; deliveries: number }>(
    "SELECT calls, deliveries FROM delivery_batch_attempts WHERE destination_id = $1 AND outcome = 'success' ORDER BY calls DESC",
    [destinationId],
  );
  expect(rows.rows).toEqual([
    { calls: 3, deliveries: 2 },
    { calls: 1, deliveries: 1 },
  ]);
});
