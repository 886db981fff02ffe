import { expect } from "vitest";
import { ManualClock } from "../../src/clock.js";
import { claimDeliveries, singleNodeJobTable, type ClaimedDelivery } from "../../src/db/job-table/index.js";
import { createCompletionWriter } from "../../src/delivery/completion-writer.js";
import { createLeaseKeeper } from "../../src/delivery/lease-keeper.js";
import { createLeaseWriteLane } from "../../src/delivery/lease-write-lane.js";
import { createLogger } from "../../src/logger.js";
import { testWith } from "../helpers/fixtures.js";
import { enqueueOne, seedSourceAndDestination } from "../helpers/job-table-fixtures.js";
import { eventually } from "../helpers/process.js";

// A heartbeat and a completion write of the same process lock the same
// queue rows, each in its own order: run at once they deadlock (Postgres
// fails one of them). The lane makes the heartbeat wait for the write in
// flight. The write is held inside its statement by an advisory lock the
// test holds, so "in flight" lasts as long as the test needs.

const t0 = new Date("2026-11-01T00:00:00Z");
const leaseMs = 60_000;

const test = testWith();

function delivered(job: ClaimedDelivery) {
  return {
    destinationId: job.destinationId,
    id: job.id,
    leaseToken: job.leaseToken,
    status: "delivered" as const,
    runAt: t0,
    attempted: true,
    attemptedAt: t0,
    retryUrls: null,
    attempts: [],
  };
}

test("a heartbeat waits for the completion write in flight, then extends the leases still held", async ({ pool }) => {
  const { sourceId } = await seedSourceAndDestination(pool, t0);
  await enqueueOne(pool, sourceId, t0);
  await enqueueOne(pool, sourceId, t0);
  const { deliveries } = await claimDeliveries(pool, { now: t0, limit: 2, perDestinationLimit: 2, room: new Map(), leaseMs, owner: "a" });
  expect(deliveries).toHaveLength(2);
  const [done, kept] = deliveries as [ClaimedDelivery, ClaimedDelivery];

  await pool.query(`CREATE FUNCTION hold_history() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM pg_advisory_xact_lock(4242); RETURN NEW; END $$`);
  await pool.query("CREATE TRIGGER hold_history BEFORE INSERT ON delivery_history FOR EACH ROW EXECUTE FUNCTION hold_history()");
  const holder = await pool.connect();
  try {
    await holder.query("BEGIN");
    await holder.query("SELECT pg_advisory_xact_lock(4242)");

    const clock = new ManualClock(t0);
    const logger = createLogger("silent");
    const lane = createLeaseWriteLane();
    const keeper = createLeaseKeeper({ pool, jobTable: singleNodeJobTable, clock, leaseMs, logger, lane });
    for (const job of deliveries) keeper.hold(job, t0);
    const writer = createCompletionWriter({
      pool,
      jobTable: singleNodeJobTable,
      logger,
      lane,
      onWritten: (written) => {
        for (const c of written) keeper.release(c.id);
      },
    });
    writer.add(delivered(done));
    const flushed = writer.flush();
    // The write has deleted its row from the queue and waits, inside its statement, on the test's lock.
    await eventually(async () => {
      const waiting = await pool.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'");
      return waiting.rowCount === 1;
    });

    clock.advance(10_000);
    const beat = keeper.beat();
    await eventually(async () => lane.pending === 2);
    // The heartbeat waits in the lane: its statement has not been sent.
    const extending = await pool.query("SELECT 1 FROM pg_stat_activity WHERE query LIKE 'UPDATE delivery_queue d SET leased_until%'");
    expect(extending.rowCount).toBe(0);

    await holder.query("COMMIT");
    await flushed;
    await beat;
    const left = await pool.query<{ id: string; leased_until: Date }>("SELECT id::text, leased_until FROM delivery_queue");
    expect(left.rows).toEqual([{ id: kept.id, leased_until: new Date(t0.getTime() + 10_000 + leaseMs) }]);
    expect((await pool.query("SELECT status::text FROM delivery_history WHERE id = $1", [done.id])).rows).toEqual([
      { status: "delivered" },
    ]);
    expect(keeper.size).toBe(1);
  } finally {
    holder.release();
    await pool.query("DROP TRIGGER hold_history ON delivery_history");
  }
});
