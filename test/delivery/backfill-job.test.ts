import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import { ManualClock } from "../../src/clock.js";
import { singleNodeJobTable } from "../../src/db/job-table/index.js";
import type { Pool } from "../../src/db/pool.js";
import { countBackfillCandidates } from "../../src/db/queries/backfill-candidates.js";
import { insertJob, selectJob } from "../../src/db/queries/background-jobs.js";
import { createBackfillJob } from "../../src/delivery/backfill-job.js";
import { createJobRunner, type JobHandler } from "../../src/background/job-runner.js";
import { createRetryJob } from "../../src/delivery/retry-job.js";
import { createLogger } from "../../src/logger.js";
import { testWith } from "../helpers/fixtures.js";

// A backfill job pages through the range's calls (pages of two here, the
// filter over slices of one), skips calls with a delivery finished or still
// waiting, queues the rest in acceptance order, and counts what it did.
const source = "00000000-0000-4000-8000-000000000001";
const destination = "00000000-0000-4000-8000-0000000000e5";
const now = new Date("2026-11-27T12:00:00Z");
const leaseMs = 60_000;
const range = { destinationId: destination, since: new Date(now.getTime() - 2 * 3_600_000), until: now };

const test = testWith();
test.beforeAll(async ({ pool }) => {
  await pool.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 's', 'x')", [source]);
}, 60_000);

test.beforeEach(async ({ pool }) => {
  await pool.query(
    "DELETE FROM delivery_queue; DELETE FROM background_jobs; DELETE FROM messages; DELETE FROM destination_sources; DELETE FROM destinations",
  );
  await pool.query(
    `INSERT INTO destinations (id, name, enabled, webhooks, filter) VALUES ($1, 'crm', false, '[{"url":"http://h/","headers":{}}]', $2)`,
    [destination, { "properties.total": { $gt: 100 } }],
  );
  await pool.query("INSERT INTO destination_sources (source_id, destination_id) VALUES ($1, $2)", [source, destination]);
  // Seven calls, m1 to m7, a minute apart; odd ones have total 500, even ones 5.
  await pool.query(
    `INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
     SELECT $1, 'm' || g, 'track', 'u', $2::timestamptz - interval '1 hour' + g * interval '1 minute',
            json_build_object('type', 'track', 'event', 'Order Completed', 'properties', json_build_object('total', CASE WHEN g % 2 = 1 THEN 500 ELSE 5 END))::text
       FROM generate_series(1, 7) g`,
    [source, now],
  );
  // m3 already waits in the queue; m5 was delivered.
  await pool.query(
    `INSERT INTO delivery_queue (destination_id, message_pk, source_id, run_at, created_at)
     SELECT $1, id, source_id, $2, $2 FROM messages WHERE message_id = 'm3'`,
    [destination, now],
  );
  await pool.query(
    `INSERT INTO delivery_history (destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count, lease_token)
     SELECT $1, nextval('delivery_ids'), id, source_id, 'delivered', $2, $2, 1, 1 FROM messages WHERE message_id = 'm5'`,
    [destination, now],
  );
});

const messageIdsQueued = async (pool: Pool) =>
  (
    await pool.query<{ message_id: string }>(
      "SELECT m.message_id FROM delivery_queue q JOIN messages m ON m.id = q.message_pk WHERE q.destination_id = $1 ORDER BY q.id",
      [destination],
    )
  ).rows.map((r) => r.message_id);

/** Stores a backfill job of the range, as BackfillDestination does. */
async function storeBackfill(pool: Pool, extra: { lease?: { token: string; until: Date }; cursor?: Record<string, unknown> } = {}) {
  const id = randomUUID();
  const candidates = await countBackfillCandidates(pool, range);
  await insertJob(pool, {
    id,
    kind: "backfill",
    destinationId: destination,
    params: { since: range.since.toISOString(), until: range.until.toISOString() },
    progress: { candidates, created: 0, filtered: 0 },
    state: "running",
    at: now,
  });
  if (extra.lease || extra.cursor) {
    await pool.query("UPDATE background_jobs SET lease_id = $2, lease_until = $3, cursor = $4 WHERE id = $1", [
      id,
      extra.lease?.token ?? null,
      extra.lease?.until ?? null,
      extra.cursor ?? null,
    ]);
  }
  return id;
}

function runner(
  pool: Pool,
  clock: ManualClock,
  backfill: JobHandler = createBackfillJob({ pageSize: 2, sliceSize: 1, jobTable: singleNodeJobTable }),
) {
  return createJobRunner({
    pool,
    clock,
    logger: createLogger("silent"),
    leaseMs,
    pollMs: 60_000,
    handlers: {
      backfill,
      retry: createRetryJob({ jobTable: singleNodeJobTable }),
      lake_deletion: { page: async () => ({ kind: "stop" as const, state: "failed" as const, error: "no lakes in this test" }) },
    },
  });
}

test("a backfill job queues each passing call once, skipping those waiting or finished, in acceptance order, and counts truthfully", async ({
  pool,
}) => {
  const jobs = runner(pool, new ManualClock(now));
  const first = await storeBackfill(pool);
  await jobs.idle();
  // m1 and m7 pass and were missing; m3 was already waiting (kept, not doubled); m5 was delivered.
  expect(await messageIdsQueued(pool)).toEqual(["m3", "m1", "m7"]);
  // Five calls had no delivery: two created, three (m2, m4, m6) turned away by the filter.
  expect(await selectJob(pool, "backfill", first)).toMatchObject({
    state: "done",
    progress: { candidates: 5, created: 2, filtered: 3 },
    lease_id: null,
  });
  const second = await storeBackfill(pool);
  await jobs.idle();
  expect(await messageIdsQueued(pool)).toEqual(["m3", "m1", "m7"]);
  expect(await selectJob(pool, "backfill", second)).toMatchObject({ state: "done", progress: { candidates: 3, created: 0, filtered: 3 } });
  await jobs.stop();
});

test("a job whose holder died is taken over once its lease runs out, from its cursor", async ({ pool }) => {
  const clock = new ManualClock(now);
  // A process held it and committed pages up to m2, then died: its lease runs another minute.
  const id = await storeBackfill(pool, { lease: { token: randomUUID(), until: new Date(now.getTime() + leaseMs) } });
  const m2 = (await pool.query("SELECT id::text FROM messages WHERE message_id = 'm2'")).rows[0].id;
  await pool.query(`UPDATE background_jobs SET cursor = $2, progress = progress || '{"created": 1, "filtered": 1}' WHERE id = $1`, [
    id,
    { after: m2 },
  ]);
  const jobs = runner(pool, clock);
  await jobs.idle();
  expect((await selectJob(pool, "backfill", id))?.state).toBe("running");
  expect(await messageIdsQueued(pool)).toEqual(["m3"]);
  clock.advance(leaseMs);
  await jobs.idle();
  // From m3 on: m7 only (m1 is before the cursor: the dead holder's page created it, as counted).
  expect(await messageIdsQueued(pool)).toEqual(["m3", "m7"]);
  expect(await selectJob(pool, "backfill", id)).toMatchObject({ state: "done", progress: { candidates: 5, created: 2, filtered: 3 } });
  await jobs.stop();
});

test("a process that stops releases its job at a page boundary, and another finishes it with every call queued once", async ({ pool }) => {
  const clock = new ManualClock(now);
  const pages = createBackfillJob({ pageSize: 2, sliceSize: 1, jobTable: singleNodeJobTable });
  let stopping: Promise<void> | undefined;
  const first = runner(pool, clock, {
    lock: pages.lock,
    async page(tx, job, at) {
      const outcome = await pages.page(tx, job, at);
      stopping ??= first.stop();
      return outcome;
    },
  });
  const id = await storeBackfill(pool);
  await first.idle();
  await stopping;
  expect(await selectJob(pool, "backfill", id)).toMatchObject({ state: "running", lease_id: null, progress: { created: 1 } });
  expect(await messageIdsQueued(pool)).toEqual(["m3", "m1"]);
  const second = runner(pool, clock);
  await second.idle();
  expect(await messageIdsQueued(pool)).toEqual(["m3", "m1", "m7"]);
  expect(await selectJob(pool, "backfill", id)).toMatchObject({ state: "done", progress: { candidates: 5, created: 2, filtered: 3 } });
  await second.stop();
});

test("a page that keeps failing is retried, then fails the job with the error", async ({ pool }) => {
  const clock = new ManualClock(now);
  const jobs = createJobRunner({
    pool,
    clock,
    logger: createLogger("silent"),
    leaseMs,
    pollMs: 60_000,
    retryMs: 1_000,
    maxFailures: 2,
    handlers: {
      backfill: {
        page: async () => {
          throw new Error("the warehouse is on fire");
        },
      },
      retry: createRetryJob({ jobTable: singleNodeJobTable }),
      lake_deletion: { page: async () => ({ kind: "stop" as const, state: "failed" as const, error: "no lakes in this test" }) },
    },
  });
  const id = await storeBackfill(pool);
  await jobs.idle();
  expect(await selectJob(pool, "backfill", id)).toMatchObject({ state: "running", failures: 1, error: "the warehouse is on fire" });
  clock.advance(1_000);
  await jobs.idle();
  expect(await selectJob(pool, "backfill", id)).toMatchObject({ state: "failed", failures: 2, error: "the warehouse is on fire" });
  await jobs.stop();
});
