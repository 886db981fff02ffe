import { beforeAll, expect, test } from "vitest";
import type { ClaimedDelivery, DeliveryCompletion } from "../../../../src/db/job-table/index.js";
import { seedDeliveries, seedDestination, seedMessages, seedSource, statuses } from "../../../helpers/job-table-rows.js";
import { describeEachDriver } from "./drivers.js";

// What a lease holder writes: heartbeats, results and refused results, of
// deliveries of several destinations at once, only while its leases hold.
describeEachDriver("heartbeats and completions", (driver, db) => {
  let first: string;
  let second: string;
  let claimed: ClaimedDelivery[];
  const now = new Date("2026-11-28T12:00:00Z");
  const seconds = (n: number) => new Date(now.getTime() + n * 1_000);

  beforeAll(async () => {
    const source = await seedSource(db.pool);
    first = await seedDestination(db.pool, source, now);
    second = await seedDestination(db.pool, source, now);
    for (const destination of [first, second]) {
      await seedDeliveries(db.pool, destination, await seedMessages(db.pool, source, now, ["a", "b", "c", "d"]), now);
    }
    const claim = { now, limit: 100, perDestinationLimit: 100, room: new Map(), leaseMs: 10_000, owner: "t" };
    claimed = (await driver.claimDeliveries(db.pool, claim)).deliveries;
  });

  const of = (destination: string) => claimed.filter((d) => d.destinationId === destination).sort((x, y) => Number(x.id) - Number(y.id));
  const attempt = (status: DeliveryCompletion["status"], batch?: { id: string; calls: number }) => ({
    urlIndex: 0,
    url: "https://example.com/hook",
    attemptedAt: now,
    outcome: status === "delivered" ? ("success" as const) : ("retryable" as const),
    statusCode: status === "delivered" ? 200 : 503,
    error: null,
    latencyMs: 5,
    responseBody: null,
    ...(batch ? { batch } : {}),
  });
  const completion = (
    d: ClaimedDelivery,
    status: DeliveryCompletion["status"],
    batch?: { id: string; calls: number },
  ): DeliveryCompletion => ({
    destinationId: d.destinationId,
    id: d.id,
    leaseToken: d.leaseToken,
    status,
    runAt: seconds(60),
    attempted: true,
    attemptedAt: now,
    retryUrls: null,
    attempts: [attempt(status, batch)],
  });

  test("the heartbeat extends only the leases still held", async () => {
    expect(claimed).toHaveLength(8);
    const stale = { ...of(first)[0]!, leaseToken: 99 };
    const extended = await driver.extendLeases(db.pool, seconds(5), 10_000, [stale, ...of(first).slice(1), ...of(second)]);
    expect([...extended].sort()).toEqual([...of(first).slice(1), ...of(second)].map((d) => d.id).sort());
    const until = await db.pool.query<{ id: string; leased_until: Date }>(
      "SELECT id, leased_until FROM delivery_queue WHERE destination_id = ANY($1)",
      [[first, second]],
    );
    for (const row of until.rows) {
      expect(row.leased_until.getTime()).toBe(row.id === stale.id ? seconds(10).getTime() : seconds(15).getTime());
    }
  });

  test("a completion batch finishes deliveries with their attempts, keeps retries queued, and ignores stale tokens", async () => {
    const [a0, a1, a2] = of(first);
    const [b0, b1] = of(second);
    const batch = { id: "0b7c1d5e-8f90-4a1b-9c2d-3e4f5a6b7c8d", calls: 2 };
    const written = await driver.completeDeliveries(db.pool, [
      completion(a0!, "delivered"),
      completion(a1!, "retrying"),
      { ...completion(a2!, "delivered"), leaseToken: a2!.leaseToken + 5 },
      completion(b0!, "delivered", batch),
      completion(b1!, "delivered", batch),
    ]);
    expect([...written].sort()).toEqual([a0!.id, a1!.id, b0!.id, b1!.id].sort());
    const firstStatuses = await statuses(db.pool, first);
    expect([a0, a1, a2].map((d) => firstStatuses.get(d!.id))).toEqual(["delivered", "retrying", "pending"]);
    const history = await db.pool.query("SELECT id FROM delivery_history WHERE destination_id = $1", [first]);
    expect(history.rows.map((row) => row.id)).toEqual([a0!.id]);
    const attempts = await db.pool.query(
      "SELECT delivery_id, attempt FROM delivery_attempts WHERE destination_id = $1 ORDER BY delivery_id",
      [first],
    );
    expect(attempts.rows).toEqual([a0!.id, a1!.id].sort().map((id) => ({ delivery_id: id, attempt: 1 })));
    // One batch operation, written once for its two deliveries and referenced from each.
    const batches = await db.pool.query("SELECT deliveries, calls FROM delivery_batch_attempts WHERE destination_id = $1", [second]);
    expect(batches.rows).toEqual([{ deliveries: 2, calls: 2 }]);
    const refs = await db.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM delivery_history WHERE destination_id = $1 AND cardinality(batch_attempts) = 1",
      [second],
    );
    expect(refs.rows[0]!.n).toBe(2);
    // The same results again: their leases have ended, nothing is written twice.
    expect(await driver.completeDeliveries(db.pool, [completion(a0!, "delivered"), completion(b0!, "delivered", batch)])).toEqual(
      new Set(),
    );
  });

  test("a refused result is counted and handed back, and fails the delivery at the limit", async () => {
    const d = of(second)[2]!;
    const refused = (maxRefusals: number, leaseToken = d.leaseToken) =>
      driver.recordRefusedCompletion(db.pool, {
        completion: { ...completion(d, "delivered"), leaseToken },
        error: "refused",
        now,
        retryAt: seconds(1),
        maxRefusals,
      });
    expect(await refused(3)).toBe("pending");
    // Handed back: the lease ended, so the holder's second try changes nothing.
    expect(await refused(1)).toBeUndefined();
    const claim = { now: seconds(2), limit: 1, perDestinationLimit: 1, room: new Map([[first, 0]]), leaseMs: 10_000, owner: "t" };
    const again = (await driver.claimDeliveries(db.pool, claim)).deliveries.find((c) => c.id === d.id)!;
    expect(await refused(2, again.leaseToken)).toBe("failed");
    expect((await statuses(db.pool, second)).get(d.id)).toBe("failed");
  });
});
