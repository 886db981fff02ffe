import { expect } from "vitest";
import { ManualClock } from "../../src/clock.js";
import type { Pool } from "../../src/db/pool.js";
import { countReplayable, singleNodeJobTable } from "../../src/db/job-table/index.js";
import { randomUUID } from "node:crypto";
import { insertJob, selectJob } from "../../src/db/queries/background-jobs.js";
import { createBackfillJob } from "../../src/delivery/backfill-job.js";
import { createJobRunner } from "../../src/background/job-runner.js";
import { createRetryJob } from "../../src/delivery/retry-job.js";
import { createLogger } from "../../src/logger.js";
import { testWith } from "../helpers/fixtures.js";

const sourceId = "00000000-0000-4000-8000-0000000000a1";
const destinationId = "00000000-0000-4000-8000-0000000000b1";
const now = new Date("2026-11-20T10:00:00Z");
const cutoff = new Date("2026-11-13T10:00:00Z");

const test = testWith();
test.beforeAll(async ({ pool }) => {
  await pool.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 's', 'k')", [sourceId]);
  await pool.query(
    `INSERT INTO destinations (id, name, enabled, webhooks) VALUES ($1, 'd', false, '[{"url":"http://example.com","headers":{}}]')`,
    [destinationId],
  );
});

/** `count` deliveries in `status`, their messages received at `receivedAt`. */
async function insert(pool: Pool, count: number, status: string, receivedAt: Date): Promise<string[]> {
  const result = await pool.query<{ id: string }>(
    `WITH m AS (
       INSERT INTO messages (source_id, message_id, type, received_at, payload)
       SELECT $1, gen_random_uuid()::text, 'track', $4, '{}' FROM generate_series(1, $3) RETURNING id
     ), queued AS (
       INSERT INTO delivery_queue (destination_id, message_pk, source_id, status, run_at, created_at, attempt_count,
                                   first_attempt_at, lease_token, lease_owner)
       SELECT $2, m.id, $1, $5::text::delivery_status, $4, $4, 3, $4, 7, 'someone'
         FROM m WHERE $5::text IN ('pending', 'retrying') RETURNING id
     ), finished AS (
       INSERT INTO delivery_history (destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count,
                                     first_attempt_at, lease_token)
       SELECT $2, nextval('delivery_ids'), m.id, $1, $5::text::delivery_status, $4, $4, 3, $4, 7
         FROM m WHERE $5::text NOT IN ('pending', 'retrying') RETURNING id
     )
     SELECT id::text FROM queued UNION ALL SELECT id::text FROM finished`,
    [sourceId, destinationId, count, receivedAt, status],
  );
  return result.rows.map((r) => r.id);
}

test("a retry job replays every match in pages with a fresh window and a new lease token, and nothing else", async ({ pool }) => {
  const recent = new Date("2026-11-19T10:00:00Z");
  const failed = await insert(pool, 25, "failed", recent);
  const expired = await insert(pool, 4, "expired", recent);
  const delivered = await insert(pool, 3, "delivered", recent);
  const old = await insert(pool, 5, "failed", new Date("2026-11-01T10:00:00Z"));
  const filter = { destinationId, statuses: ["failed", "expired"] as ("failed" | "expired")[] };
  const counts = await countReplayable(pool, filter, cutoff);
  expect(counts).toMatchObject({ replayable: 29, pastRetention: 5 });
  // Failing after the replay was asked for: not part of it.
  const later = await insert(pool, 2, "failed", recent);

  const jobs = createJobRunner({
    pool,
    clock: new ManualClock(now),
    logger: createLogger("silent"),
    leaseMs: 60_000,
    pollMs: 60_000,
    handlers: {
      backfill: createBackfillJob({ jobTable: singleNodeJobTable }),
      retry: createRetryJob({ pageSize: 10, jobTable: singleNodeJobTable }),
      lake_deletion: { page: async () => ({ kind: "stop" as const, state: "failed" as const, error: "no lakes in this test" }) },
    },
  });
  const notified = await pool.connect();
  const notifications: string[] = [];
  notified.on("notification", (n) => notifications.push(n.channel));
  await notified.query("LISTEN waypost_deliveries");
  const id = randomUUID();
  await insertJob(pool, {
    id,
    kind: "retry",
    destinationId,
    params: { statuses: filter.statuses, retentionCutoff: cutoff.toISOString(), maxId: counts.maxId! },
    progress: { matched: counts.replayable, retried: 0, notReplayable: counts.pastRetention },
    state: "running",
    at: now,
  });
  await jobs.idle();
  await jobs.stop();
  expect(await selectJob(pool, "retry", id)).toMatchObject({ state: "done", progress: { matched: 29, retried: 29, notReplayable: 5 } });
  await notified.query("SELECT 1");
  notified.release();

  const rows = await pool.query<{
    id: string;
    status: string;
    run_at: Date;
    first_attempt_at: Date | null;
    finalized_at: Date | null;
    lease_token: number;
    lease_owner: string | null;
    finished_xid: string | null;
  }>("SELECT id::text, status, run_at, first_attempt_at, finalized_at, lease_token, lease_owner, finished_xid::text FROM deliveries");
  const byId = new Map(rows.rows.map((r) => [r.id, r]));
  for (const id of [...failed, ...expired]) {
    expect(byId.get(id)).toMatchObject({
      status: "retrying",
      run_at: now,
      first_attempt_at: null,
      finalized_at: null,
      lease_token: 8,
      lease_owner: null,
      finished_xid: null,
    });
  }
  for (const id of [...old, ...later]) expect(byId.get(id)).toMatchObject({ status: "failed", lease_token: 7 });
  for (const id of delivered) expect(byId.get(id)).toMatchObject({ status: "delivered", lease_token: 7 });
  // One wake-up per batch that replayed something: 29 in batches of 10.
  expect(notifications).toEqual(["waypost_deliveries", "waypost_deliveries", "waypost_deliveries"]);
});

test("a retry job whose destination was deleted is cancelled, replaying nothing", async ({ pool }) => {
  const gone = "00000000-0000-4000-8000-0000000000b2";
  const id = randomUUID();
  await insertJob(pool, {
    id,
    kind: "retry",
    destinationId: gone,
    params: { statuses: ["failed"], retentionCutoff: cutoff.toISOString(), maxId: "1000000" },
    progress: { matched: 3, retried: 0, notReplayable: 0 },
    state: "running",
    at: now,
  });
  const jobs = createJobRunner({
    pool,
    clock: new ManualClock(now),
    logger: createLogger("silent"),
    leaseMs: 60_000,
    pollMs: 60_000,
    handlers: {
      backfill: createBackfillJob({ jobTable: singleNodeJobTable }),
      retry: createRetryJob({ jobTable: singleNodeJobTable }),
      lake_deletion: { page: async () => ({ kind: "stop" as const, state: "failed" as const, error: "no lakes in this test" }) },
    },
  });
  await jobs.idle();
  await jobs.stop();
  expect(await selectJob(pool, "retry", id)).toMatchObject({
    state: "cancelled",
    error: "the destination was deleted",
    progress: { retried: 0 },
  });
});
