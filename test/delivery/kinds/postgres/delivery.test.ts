import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import { ManualClock } from "../../../../src/clock.js";
import { claimDeliveries, completeDeliveries, type AttemptResult, type ClaimedDelivery } from "../../../../src/db/job-table/index.js";
import { createPool, type Pool } from "../../../../src/db/pool.js";
import { selectAttempts } from "../../../../src/db/queries/deliveries.js";
import { storeMessages } from "../../../../src/db/job-table/store-messages.js";
import type { PostgresDestination } from "../../../../src/delivery/kinds/postgres/delivery.js";
import { createWarehouseKind } from "../../../../src/delivery/kinds/postgres/delivery.js";
import { createLogger } from "../../../../src/logger.js";
import { createTestDatabase, openTestDatabase, type TestDatabase } from "../../../helpers/database.js";
import { seedSourceAndDestination } from "../../../helpers/job-table-fixtures.js";

// A warehouse batch's calls are one batch attempt; a process that stops
// after loading a batch and before completing it loses nothing: the leases
// run out, the calls are claimed and loaded again, and the load is
// idempotent (the warehouse keeps each call once).
const minute = 60_000;
const t0 = new Date("2026-11-28T10:00:00Z");
let database: TestDatabase;
let pool: Pool;
let warehouse: TestDatabase;
let warehouseDb: Pool;

beforeAll(async () => {
  ({ database, pool } = await openTestDatabase());
  await pool.query("SELECT waypost_create_day_partitions('2026-11-28'::date, '2026-11-29'::date)");
  warehouse = await createTestDatabase({ migrated: false });
  warehouseDb = createPool({ connectionString: warehouse.url, max: 1 });
});
afterAll(async () => {
  await pool?.end();
  await warehouseDb?.end();
  await database?.drop();
  await warehouse?.drop();
});

function kind(clock: ManualClock) {
  return createWarehouseKind({
    config: { flushMs: 10_000, batchSize: 3, connections: 1, maxColumns: 1_000 },
    clock,
    logger: createLogger("silent"),
  });
}

async function claim(now: Date): Promise<ClaimedDelivery[]> {
  return (await claimDeliveries(pool, { now, limit: 10, perDestinationLimit: 10, room: new Map(), leaseMs: minute, owner: "w" }))
    .deliveries;
}

function delivered(job: ClaimedDelivery, attempts: AttemptResult[], at: Date) {
  return {
    destinationId: job.destinationId,
    id: job.id,
    leaseToken: job.leaseToken,
    status: "delivered" as const,
    runAt: at,
    attempted: true,
    attemptedAt: at,
    retryUrls: null,
    attempts,
  };
}

test("a crash between a batch's load and its completion: the calls are claimed and loaded again, each kept once, one batch attempt each", async () => {
  const { sourceId, destinationId } = await seedSourceAndDestination(pool, t0);
  await storeMessages(
    pool,
    sourceId,
    t0,
    ["a", "b", "c"].map((user) => {
      const messageId = randomUUID();
      const payload = { type: "track", event: "Loaded", userId: user, messageId, timestamp: t0.toISOString(), context: {} };
      return { messageId, type: "track", userId: user, payload: JSON.stringify(payload), integrations: undefined };
    }),
  );
  const destination = {
    id: destinationId,
    kind: "postgres",
    revision: 1,
    postgres: { url: warehouse.url, schema: "crash" },
  } as PostgresDestination;
  const clock = new ManualClock(t0);

  // The first process loads the batch (all three calls in one transaction), then stops before completing it.
  const first = kind(clock);
  const jobs = await claim(t0);
  expect(jobs.length).toBe(3);
  const lost = await Promise.all(jobs.map((job) => first.deliver(job, destination, job.payload)));
  await first.close();
  const batch = lost[0]![0]!.batch!;
  expect(batch.calls).toBe(3);
  expect(lost.every((attempts) => attempts[0]!.batch === batch && attempts[0]!.outcome === "success")).toBe(true);
  expect((await warehouseDb.query("SELECT count(*)::int AS n FROM crash.loaded")).rows[0].n).toBe(3);

  // Its leases run out: another process claims the calls and loads them again.
  const t1 = new Date(t0.getTime() + 2 * minute);
  clock.set(t1);
  const second = kind(clock);
  const again = await claim(t1);
  expect(again.map((job) => job.id).sort()).toEqual(jobs.map((job) => job.id).sort());
  const results = await Promise.all(again.map((job) => second.deliver(job, destination, job.payload)));
  await second.close();
  expect(results[0]![0]!.batch!.id).not.toBe(batch.id);
  const written = await completeDeliveries(
    pool,
    again.map((job, i) => delivered(job, results[i]!, t1)),
  );
  expect(written.size).toBe(3);
  // The first process's results, come late, change nothing.
  expect(
    (
      await completeDeliveries(
        pool,
        jobs.map((job, i) => delivered(job, lost[i]!, t0)),
      )
    ).size,
  ).toBe(0);

  // Each call is in the warehouse once; each delivery lists one attempt, the second load's.
  expect((await warehouseDb.query("SELECT user_id FROM crash.loaded ORDER BY 1")).rows).toEqual([
    { user_id: "a" },
    { user_id: "b" },
    { user_id: "c" },
  ]);
  const attempts = await selectAttempts(
    pool,
    jobs.map(() => destinationId),
    jobs.map((job) => job.id),
  );
  expect(attempts.map((a) => [a.attempt, a.outcome])).toEqual([
    [1, "success"],
    [1, "success"],
    [1, "success"],
  ]);
  expect((await pool.query("SELECT count(*)::int AS n FROM delivery_attempts")).rows[0].n).toBe(0);
  expect((await pool.query("SELECT batch_id, calls, deliveries FROM delivery_batch_attempts")).rows).toEqual([
    { batch_id: results[0]![0]!.batch!.id, calls: 3, deliveries: 3 },
  ]);
});
