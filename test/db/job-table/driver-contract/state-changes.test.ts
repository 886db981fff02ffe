import { beforeAll, expect, test } from "vitest";
import type { ReplayPosition } from "../../../../src/db/job-table/index.js";
import { finishDeliveries, seedDeliveries, seedDestination, seedMessages, seedSource, statuses } from "../../../helpers/job-table-rows.js";
import { describeEachDriver } from "./drivers.js";

// The job table's state changes besides the lease holder's: cancel, expiry,
// replay (one and in bulk) and a backfill's page.
describeEachDriver("cancel, expiry, replay and backfill", (driver, db) => {
  let source: string;
  const now = new Date("2026-11-28T12:00:00Z");
  const later = (ms: number) => new Date(now.getTime() + ms);

  beforeAll(async () => {
    source = await seedSource(db.pool);
  });

  test("cancel finishes a destination's unfinished deliveries and revokes their leases", async () => {
    const destination = await seedDestination(db.pool, source, now);
    const other = await seedDestination(db.pool, source, now);
    await seedDeliveries(db.pool, destination, await seedMessages(db.pool, source, now, ["a", "b"]), now);
    const kept = await seedDeliveries(db.pool, other, await seedMessages(db.pool, source, now, ["a"]), now);
    expect(await driver.cancelDestinationDeliveries(db.pool, destination, now)).toBe(2);
    expect([...(await statuses(db.pool, destination)).values()]).toEqual(["cancelled", "cancelled"]);
    expect((await statuses(db.pool, other)).get(kept[0]!)).toBe("pending");
    const tokens = await db.pool.query("SELECT lease_token FROM delivery_history WHERE destination_id = $1", [destination]);
    expect(tokens.rows.map((row) => row.lease_token)).toEqual([1, 1]);
  });

  test("expiry takes paused and unhealthy destinations' deliveries past their window, and counts them for the report", async () => {
    const paused = await seedDestination(db.pool, source, now, { enabled: false });
    const open = await seedDestination(db.pool, source, now);
    const healthy = await seedDestination(db.pool, source, now);
    for (const destination of [paused, open, healthy]) {
      await seedDeliveries(db.pool, destination, await seedMessages(db.pool, source, now, ["a", "b"]), now);
    }
    await db.pool.query(
      "INSERT INTO destination_health (destination_id, state, opened_at, cooldown_ms, probe_at, updated_at) VALUES ($1, 'open', $2, 1000, $2, $2)",
      [open, now],
    );
    expect(await driver.expirePausedDeliveries(db.pool, later(3_600_000), 60_000)).toBe(4);
    expect([...(await statuses(db.pool, paused)).values()]).toEqual(["expired", "expired"]);
    expect([...(await statuses(db.pool, open)).values()]).toEqual(["expired", "expired"]);
    expect([...(await statuses(db.pool, healthy)).values()]).toEqual(["pending", "pending"]);
    const reported = await db.pool.query(
      "SELECT destination_id, expired_unreported FROM destination_health WHERE expired_unreported > 0 ORDER BY 1",
    );
    expect(reported.rows).toEqual([paused, open].sort().map((id) => ({ destination_id: id, expired_unreported: 2 })));
  });

  test("a replay brings a failed delivery back from the history (keyed by its user when the destination now orders) and a retrying one due now", async () => {
    const destination = await seedDestination(db.pool, source, now, { ordering: "per_user" });
    const messages = await seedMessages(db.pool, source, now, ["u1", "u2", "u3"]);
    const [failed, waiting, delivered] = await seedDeliveries(db.pool, destination, messages, now);
    await finishDeliveries(db.pool, destination, [failed!], "failed", now);
    await finishDeliveries(db.pool, destination, [delivered!], "delivered", now);
    await db.pool.query("UPDATE delivery_queue SET status = 'retrying', run_at = $3 WHERE destination_id = $1 AND id = $2", [
      destination,
      waiting,
      later(600_000),
    ]);
    const at = later(1_000);
    expect(await driver.replayDelivery(db.pool, destination, failed!, at)).toBe(true);
    expect(await driver.replayDelivery(db.pool, destination, waiting!, at)).toBe(true);
    expect(await driver.replayDelivery(db.pool, destination, delivered!, at)).toBe(false);
    const queued = await db.pool.query(
      "SELECT id, status::text, run_at, ordering_key, lease_token FROM delivery_queue WHERE destination_id = $1 ORDER BY id",
      [destination],
    );
    expect(queued.rows).toEqual([
      { id: failed, status: "retrying", run_at: at, ordering_key: "u1", lease_token: 2 },
      { id: waiting, status: "retrying", run_at: at, ordering_key: null, lease_token: 1 },
    ]);
  });

  test("a bulk replay pages through the destination's matching deliveries, leaving out those past retention", async () => {
    const destination = await seedDestination(db.pool, source, now);
    const old = await seedMessages(db.pool, source, later(-86_400_000), ["x"]);
    const fresh = await seedMessages(db.pool, source, now, ["a", "b", "c"]);
    const ids = await seedDeliveries(db.pool, destination, [...old, ...fresh], now);
    await finishDeliveries(db.pool, destination, ids, "failed", now);
    const replay = {
      filter: { destinationId: destination, statuses: ["failed" as const] },
      retentionCutoff: later(-3_600_000),
      maxId: ids[3]!,
    };
    // Batch after batch to the end. Where a batch ends is the driver's own
    // (on Citus a delivery past retention counts toward its batch).
    let replayed = 0;
    let position: ReplayPosition | undefined;
    for (let batch = 1; ; batch++) {
      const result = await driver.replayBatch(db.pool, replay, position, later(1_000), 2);
      replayed += result.replayed;
      position = result.next;
      if (!position) break;
      expect(batch).toBeLessThan(ids.length);
    }
    expect(replayed).toBe(3);
    const after = await statuses(db.pool, destination);
    expect(ids.map((id) => after.get(id))).toEqual(["failed", "retrying", "retrying", "retrying"]);
  });

  test("a bulk replay by user replays only that user's deliveries", async () => {
    const destination = await seedDestination(db.pool, source, now);
    const users = [`who-${destination}`, "someone-else", `who-${destination}`];
    const ids = await seedDeliveries(db.pool, destination, await seedMessages(db.pool, source, now, users), now);
    await finishDeliveries(db.pool, destination, ids, "failed", now);
    const filter = { destinationId: destination, statuses: ["failed" as const], userId: users[0] };
    const replay = { filter, retentionCutoff: later(-3_600_000), maxId: ids[2]! };
    expect((await driver.replayBatch(db.pool, replay, undefined, now, 10)).replayed).toBe(2);
    const after = await statuses(db.pool, destination);
    expect(ids.map((id) => after.get(id))).toEqual(["retrying", "failed", "retrying"]);
  });

  test("a backfill page queues deliveries only for calls the destination has none of", async () => {
    const destination = await seedDestination(db.pool, source, now);
    const messages = await seedMessages(db.pool, source, now, ["a", "b", "c", "d"]);
    await seedDeliveries(db.pool, destination, messages.slice(0, 1), now);
    await finishDeliveries(db.pool, destination, await seedDeliveries(db.pool, destination, messages.slice(1, 2), now), "delivered", now);
    const client = await db.pool.connect();
    try {
      await client.query("BEGIN");
      const result = await driver.enqueueBackfillPage(
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
    const queued = await db.pool.query("SELECT message_pk FROM delivery_queue WHERE destination_id = $1 ORDER BY message_pk", [
      destination,
    ]);
    expect(queued.rows.map((row) => row.message_pk)).toEqual([messages[0], messages[2]]);
  });
});
