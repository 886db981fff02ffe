import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import {
  cancelDestinationDeliveries,
  claimDeliveries,
  completeDeliveries,
  expirePausedDeliveries,
  extendLeases,
  recordRefusedCompletion,
  replayDelivery,
  type ClaimedDelivery,
  type DeliveryCompletion,
  type DeliveryStatus,
} from "../../../src/db/job-table/index.js";
import type { Pool } from "../../../src/db/pool.js";
import { storeMessages } from "../../../src/db/job-table/store-messages.js";
import { testWith } from "../../helpers/fixtures.js";
import { deleteMessages, seedSourceAndDestination } from "../../helpers/job-table-fixtures.js";

const test = testWith();

const minute = 60_000;
const deadlineMs = 60 * minute;
let sourceId: string;
let destinationId: string;
const t0 = new Date("2026-11-01T00:00:00Z");

// Each test starts from an empty job table, with its own source and destination.
test.beforeEach(async ({ pool }) => {
  await deleteMessages(pool);
  ({ sourceId, destinationId } = await seedSourceAndDestination(pool, t0));
});

async function enqueueOne(pool: Pool, at = t0): Promise<string> {
  const messageId = randomUUID();
  await storeMessages(pool, sourceId, at, [
    { messageId, type: "track", userId: "u", payload: JSON.stringify({ messageId }), integrations: undefined },
  ]);
  const row = await pool.query<{ id: string }>(
    "SELECT d.id FROM deliveries d JOIN messages m ON m.id = d.message_pk WHERE m.message_id = $1",
    [messageId],
  );
  return row.rows[0]!.id;
}

async function claim(pool: Pool, now: Date, owner = "a", leaseMs = minute): Promise<ClaimedDelivery[]> {
  return (await claimDeliveries(pool, { now, limit: 10, perDestinationLimit: 10, room: new Map(), leaseMs, owner })).deliveries;
}

interface Row {
  status: DeliveryStatus;
  lease_token: number;
  lease_owner: string | null;
  leased_until: Date | null;
  attempt_count: number;
  run_at: Date;
  finalized_at: Date | null;
  attempts: number;
  batch_attempts: string[] | null;
}

async function row(pool: Pool, id: string): Promise<Row> {
  const result = await pool.query<Row>(
    `SELECT status, lease_token, lease_owner, leased_until, attempt_count, run_at, finalized_at,
            (SELECT count(*)::int FROM delivery_attempts a WHERE a.delivery_id = d.id) AS attempts, batch_attempts
       FROM deliveries d WHERE id = $1`,
    [id],
  );
  return result.rows[0]!;
}

/** The result a lease holder would write: delivered, with one successful attempt. */
function completion(job: ClaimedDelivery, at: Date, status: DeliveryStatus = "delivered"): DeliveryCompletion {
  return {
    destinationId: job.destinationId,
    id: job.id,
    leaseToken: job.leaseToken,
    status,
    runAt: new Date(at.getTime() + minute),
    attempted: true,
    attemptedAt: at,
    retryUrls: null,
    attempts: [
      {
        urlIndex: 0,
        url: "https://example.com/hook",
        attemptedAt: at,
        outcome: status === "delivered" ? "success" : "retryable",
        statusCode: status === "delivered" ? 200 : 503,
        error: null,
        latencyMs: 5,
        responseBody: null,
      },
    ],
  };
}

test("an enqueued delivery is pending and unleased; a claim leases it; the holder's completion applies", async ({ pool }) => {
  const id = await enqueueOne(pool);
  const fresh = await row(pool, id);
  expect(fresh).toMatchObject({ status: "pending", lease_owner: null, leased_until: null, attempt_count: 0 });

  const [job] = await claim(pool, t0);
  expect(job!.id).toBe(id);
  const leased = await row(pool, id);
  expect(leased.lease_token).toBe(fresh.lease_token + 1);
  expect(job!.leaseToken).toBe(leased.lease_token);
  expect(leased.lease_owner).toBe("a");
  expect(leased.leased_until).toEqual(new Date(t0.getTime() + minute));

  const written = await completeDeliveries(pool, [completion(job!, t0)]);
  expect([...written]).toEqual([id]);
  expect(await row(pool, id)).toMatchObject({
    status: "delivered",
    lease_token: leased.lease_token,
    lease_owner: null,
    leased_until: null,
    attempt_count: 1,
    attempts: 1,
  });
});

/**
 * Each operation that takes a delivery from its lease holder, run between a
 * claim and that holder's completion: the completion must change nothing.
 */
const revokers: Array<{ name: string; revoke: (pool: Pool, id: string) => Promise<void>; expected: Partial<Row> }> = [
  {
    name: "cancel (destination deleted)",
    revoke: async (pool) => {
      expect(await cancelDestinationDeliveries(pool, destinationId, t0)).toBe(1);
    },
    expected: { status: "cancelled", finalized_at: t0 },
  },
  {
    name: "expire (destination paused past the retry window)",
    revoke: async (pool) => {
      await pool.query("UPDATE destinations SET enabled = false WHERE id = $1", [destinationId]);
      const now = new Date(t0.getTime() + deadlineMs + minute);
      expect(await expirePausedDeliveries(pool, now, deadlineMs)).toBe(1);
    },
    expected: { status: "expired", finalized_at: new Date(t0.getTime() + deadlineMs + minute) },
  },
  {
    name: "replay",
    revoke: async (pool, id) => {
      expect(await replayDelivery(pool, destinationId, id, t0)).toBe(true);
    },
    expected: { status: "retrying", finalized_at: null, run_at: t0 },
  },
  {
    name: "a later claim once the lease has run out",
    revoke: async (pool, id) => {
      const [taken] = await claim(pool, new Date(t0.getTime() + 2 * minute), "b");
      expect(taken?.id).toBe(id);
    },
    expected: { status: "retrying", lease_owner: "b" },
  },
];

test.for(revokers)("a completion from before $name changes nothing", async ({ revoke, expected }, { pool }) => {
  const id = await enqueueOne(pool);
  // First a failed attempt, so the delivery is retrying (replay's precondition) with one attempt row.
  const [first] = await claim(pool, t0);
  expect(await completeDeliveries(pool, [completion(first!, t0, "retrying")])).toEqual(new Set([id]));
  await pool.query("UPDATE delivery_queue SET run_at = $2 WHERE id = $1", [id, t0]);
  const [held] = await claim(pool, t0);
  expect(held!.id).toBe(id);

  await revoke(pool, id);
  const after = await row(pool, id);
  expect(after).toMatchObject(expected);
  expect(after.lease_token).toBeGreaterThan(held!.leaseToken);
  if (after.lease_owner === null) expect(after.leased_until).toBeNull();

  // The old holder finishes: its result (delivered, one more attempt) must not land.
  const written = await completeDeliveries(pool, [completion(held!, new Date(t0.getTime() + 3 * minute))]);
  expect(written.size).toBe(0);
  expect(await row(pool, id)).toEqual(after);
  expect(after.attempts).toBe(1);
  // Nor a result that was part of a batch: no batch attempt row, no reference.
  const batched = completion(held!, new Date(t0.getTime() + 3 * minute));
  batched.attempts = batched.attempts.map((a) => ({ ...a, batch: { id: randomUUID(), calls: 1 } }));
  expect((await completeDeliveries(pool, [batched])).size).toBe(0);
  expect(await row(pool, id)).toEqual(after);
  expect(after.batch_attempts).toBeNull();
  expect((await pool.query("SELECT count(*)::int AS n FROM delivery_batch_attempts")).rows[0].n).toBe(0);
});

test("a replay only takes failed, expired or retrying deliveries", async ({ pool }) => {
  const id = await enqueueOne(pool);
  expect(await replayDelivery(pool, destinationId, id, t0)).toBe(false);
  const [job] = await claim(pool, t0);
  await completeDeliveries(pool, [completion(job!, t0)]);
  expect(await replayDelivery(pool, destinationId, id, t0)).toBe(false);
  expect((await row(pool, id)).status).toBe("delivered");
});

test("after a replay the new holder's completion applies", async ({ pool }) => {
  const id = await enqueueOne(pool);
  const [first] = await claim(pool, t0);
  await completeDeliveries(pool, [completion(first!, t0, "retrying")]);
  expect(await replayDelivery(pool, destinationId, id, t0)).toBe(true);
  const [again] = await claim(pool, t0);
  expect(again!.leaseToken).toBeGreaterThan(first!.leaseToken);
  expect(again!.attemptCount).toBe(1);
  expect(again!.firstAttemptAt).toBeNull();
  expect(await completeDeliveries(pool, [completion(again!, t0)])).toEqual(new Set([id]));
  expect(await row(pool, id)).toMatchObject({ status: "delivered", attempt_count: 2, attempts: 2 });
});

test("cancel and expire leave finished deliveries alone", async ({ pool }) => {
  const id = await enqueueOne(pool);
  const [job] = await claim(pool, t0);
  await completeDeliveries(pool, [completion(job!, t0)]);
  const before = await row(pool, id);
  expect(await cancelDestinationDeliveries(pool, destinationId, t0)).toBe(0);
  await pool.query("UPDATE destinations SET enabled = false WHERE id = $1", [destinationId]);
  expect(await expirePausedDeliveries(pool, new Date(t0.getTime() + 2 * deadlineMs), deadlineMs)).toBe(0);
  expect(await row(pool, id)).toEqual(before);
});

test("a heartbeat extends only leases the holder still has: not one taken over, revoked, or ended by its completion", async ({ pool }) => {
  const [kept, takenOver, revoked, completed] = [
    await enqueueOne(pool),
    await enqueueOne(pool),
    await enqueueOne(pool),
    await enqueueOne(pool),
  ];
  const jobs = await claim(pool, t0);
  expect(jobs).toHaveLength(4);
  const job = (id: string) => jobs.find((j) => j.id === id)!;
  const later = new Date(t0.getTime() + minute / 2);
  // One lease has run out (the holder stalled) and another process claims
  // the delivery; the others are still held.
  await pool.query("UPDATE delivery_queue SET leased_until = $2 WHERE id = $1", [takenOver, t0]);
  const taken = await claimDeliveries(pool, {
    now: later,
    limit: 10,
    perDestinationLimit: 10,
    room: new Map(),
    leaseMs: minute,
    owner: "b",
  });
  const [other] = taken.deliveries;
  expect(taken.deliveries.map((d) => d.id)).toEqual([takenOver]);
  await completeDeliveries(pool, [completion(job(revoked), t0, "retrying")]);
  expect(await replayDelivery(pool, destinationId, revoked, t0)).toBe(true);
  await completeDeliveries(pool, [completion(job(completed), t0)]);

  const extended = await extendLeases(pool, later, minute, jobs);
  expect([...extended]).toEqual([kept]);
  expect((await row(pool, kept)).leased_until).toEqual(new Date(later.getTime() + minute));
  expect(await row(pool, takenOver)).toMatchObject({
    lease_owner: "b",
    lease_token: other!.leaseToken,
    leased_until: new Date(later.getTime() + minute),
  });
  expect(await row(pool, revoked)).toMatchObject({ status: "retrying", leased_until: null });
  expect(await row(pool, completed)).toMatchObject({ status: "delivered", leased_until: null });
});

test("a claim passes over the lapsed leases its process still holds; their late heartbeat extends them", async ({ pool }) => {
  const [kept, free] = [await enqueueOne(pool), await enqueueOne(pool)];
  const jobs = await claim(pool, t0);
  expect(jobs).toHaveLength(2);
  // The holder stalled past both leases; it still works `kept` (its request
  // is in flight) and gave `free` up.
  const later = new Date(t0.getTime() + 2 * minute);
  const again = await claimDeliveries(pool, {
    now: later,
    limit: 10,
    perDestinationLimit: 10,
    room: new Map(),
    leaseMs: minute,
    owner: "a",
    keep: [kept],
  });
  expect(again.deliveries.map((d) => d.id)).toEqual([free]);
  // Nobody took `kept` over: the token is the holder's, and the heartbeat revives the lease.
  const extended = await extendLeases(pool, later, minute, jobs);
  expect([...extended]).toEqual([kept]);
  expect((await row(pool, kept)).leased_until).toEqual(new Date(later.getTime() + minute));
});

test("a refused result is counted and handed back; the limit-th refusal fails the delivery with the error; a lost lease changes nothing", async ({
  pool,
}) => {
  const id = await enqueueOne(pool);
  const refuse = async (job: ClaimedDelivery, at: Date) =>
    recordRefusedCompletion(pool, {
      completion: completion(job, at),
      error: "refused by a trigger",
      now: at,
      retryAt: new Date(at.getTime() + minute),
      maxRefusals: 2,
    });
  const [first] = await claim(pool, t0);
  expect(await refuse(first!, t0)).toBe("pending");
  const once = await pool.query("SELECT refused_completions, last_error, first_attempt_at FROM deliveries WHERE id = $1", [id]);
  expect(once.rows[0]).toEqual({ refused_completions: 1, last_error: "refused by a trigger", first_attempt_at: t0 });
  expect(await row(pool, id)).toMatchObject({
    status: "pending",
    leased_until: null,
    lease_owner: null,
    attempt_count: 0,
    attempts: 0,
    run_at: new Date(t0.getTime() + minute),
  });
  // A stale holder's refusal (its lease moved on) counts nothing.
  expect(await refuse(first!, t0)).toBeUndefined();

  const t1 = new Date(t0.getTime() + minute);
  const [second] = await claim(pool, t1);
  expect(second!.id).toBe(id);
  expect(await refuse(second!, t1)).toBe("failed");
  expect(await row(pool, id)).toMatchObject({ status: "failed", finalized_at: t1, leased_until: null, attempts: 0 });
  const twice = await pool.query("SELECT refused_completions, last_error FROM deliveries WHERE id = $1", [id]);
  expect(twice.rows[0]).toEqual({ refused_completions: 2, last_error: "refused by a trigger" });
});
