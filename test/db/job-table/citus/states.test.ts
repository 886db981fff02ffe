import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { citusJobTable } from "../../../../src/db/job-table/citus/index.js";
import { createDayPartitions, dropDaysBefore } from "../../../../src/db/job-table/index.js";
import type { Pool } from "../../../../src/db/pool.js";
import { citusSkipReason, citusUrl, openCitusTestDatabase } from "../../../helpers/citus.js";
import { seedDeliveries, seedDestination, seedMessages, seedSource, statuses } from "../../../helpers/citus-job-table.js";

// The job table's other state changes, and its upkeep, on the cluster.
describe.skipIf(!citusUrl)(`cancel, expiry, replay, backfill, days and queue statistics on Citus${citusSkipReason}`, () => {
  let pool: Pool;
  let close: () => Promise<void>;
  let source: string;
  const now = new Date("2026-11-28T12:00:00Z");
  const later = (ms: number) => new Date(now.getTime() + ms);

  beforeAll(async () => {
    ({ pool, close } = await openCitusTestDatabase());
    source = await seedSource(pool);
  }, 120_000);
  afterAll(async () => close?.());

  /** Moves deliveries to the history as `status`, by hand. */
  async function finish(destination: string, ids: readonly string[], status: string) {
    await pool.query(
      `WITH q AS (DELETE FROM delivery_queue WHERE destination_id = $1 AND id = ANY($2::bigint[]) RETURNING *)
       INSERT INTO delivery_history (destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count, lease_token, ordering_key)
       SELECT destination_id, id, message_pk, source_id, $3::delivery_status, created_at, $4, attempt_count, lease_token + 1, ordering_key FROM q`,
      [destination, ids, status, now],
    );
  }

  test("cancel finishes a destination's unfinished deliveries and revokes their leases", async () => {
    const destination = await seedDestination(pool, source, now);
    const other = await seedDestination(pool, source, now);
    const ids = await seedDeliveries(pool, destination, await seedMessages(pool, source, now, ["a", "b"]), now);
    const kept = await seedDeliveries(pool, other, await seedMessages(pool, source, now, ["a"]), now);
    expect(await citusJobTable.cancelDestinationDeliveries(pool, destination, now)).toBe(2);
    expect([...(await statuses(pool, destination)).values()]).toEqual(["cancelled", "cancelled"]);
    expect((await statuses(pool, other)).get(kept[0]!)).toBe("pending");
    const tokens = await pool.query("SELECT lease_token FROM delivery_history WHERE destination_id = $1", [destination]);
    expect(tokens.rows.map((row) => row.lease_token)).toEqual([1, 1]);
    expect(ids).toHaveLength(2);
  });

  test("expiry takes paused and unhealthy destinations' deliveries past their window, and counts them for the report", async () => {
    const paused = await seedDestination(pool, source, now, { enabled: false });
    const open = await seedDestination(pool, source, now);
    const healthy = await seedDestination(pool, source, now);
    for (const destination of [paused, open, healthy])
      await seedDeliveries(pool, destination, await seedMessages(pool, source, now, ["a", "b"]), now);
    await pool.query(
      "INSERT INTO destination_health (destination_id, state, opened_at, cooldown_ms, probe_at, updated_at) VALUES ($1, 'open', $2, 1000, $2, $2)",
      [open, now],
    );
    expect(await citusJobTable.expirePausedDeliveries(pool, later(3_600_000), 60_000)).toBe(4);
    expect([...(await statuses(pool, paused)).values()]).toEqual(["expired", "expired"]);
    expect([...(await statuses(pool, open)).values()]).toEqual(["expired", "expired"]);
    expect([...(await statuses(pool, healthy)).values()]).toEqual(["pending", "pending"]);
    const reported = await pool.query(
      "SELECT destination_id, expired_unreported FROM destination_health WHERE expired_unreported > 0 ORDER BY 1",
    );
    expect(reported.rows).toEqual([paused, open].sort().map((id) => ({ destination_id: id, expired_unreported: 2 })));
  });

  test("a replay brings a failed delivery back from the history (keyed by its user when the destination now orders) and a retrying one due now", async () => {
    const destination = await seedDestination(pool, source, now, { ordering: "per_user" });
    const [failed, waiting, delivered] = await seedDeliveries(
      pool,
      destination,
      await seedMessages(pool, source, now, ["u1", "u2", "u3"]),
      now,
    );
    await finish(destination, [failed!], "failed");
    await finish(destination, [delivered!], "delivered");
    await pool.query("UPDATE delivery_queue SET status = 'retrying', run_at = $3 WHERE destination_id = $1 AND id = $2", [
      destination,
      waiting,
      later(600_000),
    ]);
    const at = later(1_000);
    expect(await citusJobTable.replayDelivery(pool, destination, failed!, at)).toBe(true);
    expect(await citusJobTable.replayDelivery(pool, destination, waiting!, at)).toBe(true);
    expect(await citusJobTable.replayDelivery(pool, destination, delivered!, at)).toBe(false);
    const queued = await pool.query<{ id: string; status: string; run_at: Date; ordering_key: string | null; lease_token: number }>(
      "SELECT id, status::text, run_at, ordering_key, lease_token FROM delivery_queue WHERE destination_id = $1 ORDER BY id",
      [destination],
    );
    expect(queued.rows).toEqual([
      { id: failed, status: "retrying", run_at: at, ordering_key: "u1", lease_token: 2 },
      { id: waiting, status: "retrying", run_at: at, ordering_key: null, lease_token: 1 },
    ]);
  });

  test("a bulk replay pages through the destination's matching deliveries, leaving out those past retention", async () => {
    const destination = await seedDestination(pool, source, now);
    const old = await seedMessages(pool, source, later(-86_400_000), ["x"]);
    const fresh = await seedMessages(pool, source, now, ["a", "b", "c"]);
    const ids = await seedDeliveries(pool, destination, [...old, ...fresh], now);
    await finish(destination, ids, "failed");
    const replay = {
      filter: { destinationId: destination, statuses: ["failed" as const] },
      retentionCutoff: later(-3_600_000),
      maxId: ids[3]!,
    };
    const first = await citusJobTable.replayBatch(pool, replay, undefined, later(1_000), 2);
    expect(first.replayed).toBe(1);
    expect(first.next?.id).toBe(ids[1]);
    const second = await citusJobTable.replayBatch(pool, replay, first.next, later(1_000), 2);
    expect(second).toEqual({ replayed: 2, next: { createdAt: second.next?.createdAt, id: ids[3] } });
    const third = await citusJobTable.replayBatch(pool, replay, second.next, later(1_000), 2);
    expect(third).toEqual({ replayed: 0, next: undefined });
    const now_ = await statuses(pool, destination);
    expect(ids.map((id) => now_.get(id))).toEqual(["failed", "retrying", "retrying", "retrying"]);
  });

  test("a backfill page queues deliveries only for calls the destination has none of", async () => {
    const destination = await seedDestination(pool, source, now);
    const messages = await seedMessages(pool, source, now, ["a", "b", "c", "d"]);
    await seedDeliveries(pool, destination, messages.slice(0, 1), now);
    const finished = await seedDeliveries(pool, destination, messages.slice(1, 2), now);
    await finish(destination, finished, "delivered");
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      const result = await citusJobTable.enqueueBackfillPage(
        client,
        destination,
        { messagePks: messages, passes: [true, true, true, false] },
        now,
      );
      await client.query("COMMIT");
      expect(result).toMatchObject({ fresh: 2, filtered: 1, created: 1 });
    } finally {
      client.release();
    }
    const queued = await pool.query("SELECT message_pk FROM delivery_queue WHERE destination_id = $1 ORDER BY message_pk", [destination]);
    expect(queued.rows.map((row) => row.message_pk)).toEqual([messages[0], messages[2]]);
  });

  test("a backfill's candidates leave out calls the destination has a delivery of, in two steps across the shards", async () => {
    const destination = await seedDestination(pool, source, now);
    const at = later(86_400_000);
    const messages = await seedMessages(pool, source, at, ["a", "b", "c", "d", "e"]);
    await seedDeliveries(pool, destination, messages.slice(0, 1), now);
    await finish(destination, await seedDeliveries(pool, destination, messages.slice(1, 3), now), "delivered");
    const range = { destinationId: destination, since: at, until: later(86_400_001) };
    // Queued or finished, a call with a delivery is no candidate.
    expect(await citusJobTable.reads.countBackfillCandidates(pool, range)).toBe(2);
    // Pages skip only finished ones (a page's insert skips queued ones); a short page ends the range.
    const first = await citusJobTable.reads.selectBackfillCandidates(pool, range, "0", 2);
    expect(first.map((call) => call.id)).toEqual([messages[0], messages[3]]);
    expect(JSON.parse(first[1]!.payload!)).toMatchObject({ userId: "d" });
    const rest = await citusJobTable.reads.selectBackfillCandidates(pool, range, first[1]!.id, 2, false);
    expect(rest).toEqual([{ id: messages[4], payload: null, received_at: at }]);
  });

  test("counting and replaying by user reads the user's messages first", async () => {
    const destination = await seedDestination(pool, source, now);
    const users = [`who-${destination}`, "someone-else", `who-${destination}`];
    const ids = await seedDeliveries(pool, destination, await seedMessages(pool, source, now, users), now);
    await finish(destination, ids, "failed");
    const filter = { destinationId: destination, statuses: ["failed" as const], userId: users[0] };
    const counts = await citusJobTable.reads.countReplayable(pool, filter, later(-3_600_000));
    expect(counts).toMatchObject({ replayable: 2, pastRetention: 0 });
    expect(Number(counts.maxId)).toBeGreaterThanOrEqual(Number(ids[2]));
    const replayed = await citusJobTable.replayBatch(
      pool,
      { filter, retentionCutoff: later(-3_600_000), maxId: counts.maxId! },
      undefined,
      now,
      10,
    );
    expect(replayed.replayed).toBe(2);
    const after = await statuses(pool, destination);
    expect(ids.map((id) => after.get(id))).toEqual(["retrying", "failed", "retrying"]);
  });

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
