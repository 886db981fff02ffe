import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { citusJobTable } from "../../../../src/db/job-table/citus/index.js";
import { createDayPartitions, dropDaysBefore } from "../../../../src/db/job-table/index.js";
import type { Pool } from "../../../../src/db/pool.js";
import { citusSkipReason, citusUrl, openCitusTestDatabase } from "../../../helpers/citus.js";
import { seedDeliveries, seedDestination, seedMessages, seedSource } from "../../../helpers/job-table-rows.js";

// The job table's upkeep on the cluster: the distributed history's day
// partitions, and queue statistics read from the shards (its state changes,
// both drivers alike, are in ../driver-contract/).
describe.skipIf(!citusUrl)(`days and queue statistics on Citus${citusSkipReason}`, () => {
  let pool: Pool;
  let close: () => Promise<void>;
  let source: string;
  const now = new Date("2026-11-28T12:00:00Z");

  beforeAll(async () => {
    ({ pool, close } = await openCitusTestDatabase());
    source = await seedSource(pool);
  }, 120_000);
  afterAll(async () => close?.());

  test("day partitions of the distributed history are created ahead and dropped past retention", async () => {
    const far = new Date("2027-03-01T00:00:00Z");
    expect(await createDayPartitions(pool, far, 1)).toBe(6);
    const shards = await pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_dist_partition WHERE logicalrelid::text IN ('delivery_history_20270301', 'delivery_attempts_20270302')",
    );
    expect(shards.rows[0]!.n).toBe(2);
    const dropped = await dropDaysBefore(pool, new Date("2027-03-03T00:00:00Z"));
    expect(
      dropped
        .filter((d) => d.day.startsWith("202703"))
        .map((d) => `${d.table}_${d.day}`)
        .sort(),
    ).toEqual(["delivery_attempts", "delivery_batch_attempts", "delivery_history"].flatMap((t) => [`${t}_20270301`, `${t}_20270302`]));
    const left = await pool.query("SELECT to_regclass('delivery_history_20270301') AS t");
    expect(left.rows[0]!.t).toBeNull();
  });

  test("queue activity is read from the shards, not the coordinator's empty table", async () => {
    const destination = await seedDestination(pool, source, now);
    await seedDeliveries(
      pool,
      destination,
      await seedMessages(
        pool,
        source,
        now,
        Array.from({ length: 40 }, (_, i) => `u${i}`),
      ),
      now,
    );
    await pool.query("DELETE FROM delivery_queue WHERE destination_id = $1 AND id % 2 = 0", [destination]);
    const queued = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM delivery_queue");
    // ANALYZE runs on every shard (Citus propagates it) and writes each
    // shard's figures at once: the sums are then exact on these small shards,
    // once each worker's backend has flushed the DELETE's pending statistics
    // (Postgres does so when the backend goes idle, at most once a second).
    const n = queued.rows[0]!.n;
    let activity = await citusJobTable.readQueueActivity(pool);
    for (let tries = 0; tries < 50 && (activity?.live !== n || activity?.analyzedRows !== n); tries++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      await pool.query("ANALYZE delivery_queue");
      activity = await citusJobTable.readQueueActivity(pool);
    }
    expect(activity).toMatchObject({ live: n, analyzedRows: n });
    expect(queued.rows[0]!.n).toBeGreaterThanOrEqual(20);
    const coordinator = await pool.query<{ n: number }>(
      "SELECT coalesce(sum(n_live_tup), 0)::int AS n FROM pg_stat_user_tables WHERE relname = 'delivery_queue'",
    );
    expect(coordinator.rows[0]!.n).toBe(0);
  });
});
