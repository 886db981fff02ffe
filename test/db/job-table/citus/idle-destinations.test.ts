import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { citusJobTable } from "../../../../src/db/job-table/citus/index.js";
import type { ClaimOptions } from "../../../../src/db/job-table/index.js";
import type { Pool, Queryable } from "../../../../src/db/pool.js";
import { citusSkipReason, citusUrl, openCitusTestDatabase } from "../../../helpers/citus.js";
import { seedDeliveries, seedDestination, seedMessages, seedSource } from "../../../helpers/job-table-rows.js";

/** A pool that records the destination of every per-destination claim statement it runs (its 8th parameter). */
function countingPool(pool: Pool): { db: Queryable; perDestination: string[] } {
  const perDestination: string[] = [];
  const db = {
    query(config: { text: string; values?: unknown[] } | string, values?: unknown[]) {
      if (typeof config === "object" && config.text.includes("$8::uuid")) perDestination.push(String(config.values?.[7]));
      return (pool.query as (c: unknown, v?: unknown[]) => Promise<unknown>)(config, values);
    },
  } as unknown as Queryable;
  return { db, perDestination };
}

// The claim on Citus asks only destinations with work due: idle ones cost
// it no statement, and work that becomes due later is claimed once due.
describe.skipIf(!citusUrl)(`the claim on Citus beside idle destinations${citusSkipReason}`, () => {
  let pool: Pool;
  let close: () => Promise<void>;
  let source: string;
  const now = new Date("2026-11-28T12:00:00Z");
  const at = (ms: number) => new Date(now.getTime() + ms);
  const claim = (db: Queryable, when: Date, options: Partial<ClaimOptions> = {}) =>
    citusJobTable.claimDeliveries(db, {
      now: when,
      limit: 100,
      perDestinationLimit: 100,
      room: new Map(),
      leaseMs: 30_000,
      owner: "test",
      ...options,
    });

  beforeAll(async () => {
    ({ pool, close } = await openCitusTestDatabase());
    source = await seedSource(pool);
  }, 120_000);
  afterAll(async () => close?.());
  // Each test's destinations alone: the earlier tests' are out of the way.
  beforeEach(async () => {
    await pool.query("UPDATE destinations SET enabled = false");
  });

  test("200 idle enabled destinations beside a busy one: statements for the busy one only", async () => {
    const idle: string[] = [];
    for (let i = 0; i < 200; i++) idle.push(await seedDestination(pool, source, now));
    // Idle: nothing queued, or only a retry not due yet, or only a delivery in flight (leased).
    const [later, leased] = await seedMessages(pool, source, now, ["later", "leased"]);
    await seedDeliveries(pool, idle[0]!, [later!], at(60_000));
    await seedDeliveries(pool, idle[1]!, [leased!], at(-1_000));
    await pool.query("UPDATE delivery_queue SET leased_until = $2, lease_owner = 'other' WHERE destination_id = $1", [idle[1], at(30_000)]);
    const busy = await seedDestination(pool, source, now);
    await seedDeliveries(pool, busy, await seedMessages(pool, source, now, ["a", "b", "c", "d", "e"]), at(-1_000));

    const { db, perDestination } = countingPool(pool);
    const result = await claim(db, now);
    expect(result.deliveries.map((d) => d.destinationId)).toEqual(Array(5).fill(busy));
    expect(perDestination).toEqual([busy]);
    // Drained: the next claim asks no destination at all.
    perDestination.length = 0;
    expect((await claim(db, at(1))).deliveries).toEqual([]);
    expect(perDestination).toEqual([]);
  });

  test("a retry due later is claimed once due, and a lease that runs out makes its delivery due again", async () => {
    const start = at(3_600_000);
    const d = await seedDestination(pool, source, start);
    const [m] = await seedMessages(pool, source, start, ["x"]);
    const [id] = await seedDeliveries(pool, d, [m!], new Date(start.getTime() + 5_000));
    const { db, perDestination } = countingPool(pool);
    expect((await claim(db, start)).deliveries).toEqual([]);
    expect(perDestination).toEqual([]);

    // Due five seconds on: claimed then.
    const due = new Date(start.getTime() + 5_000);
    const first = await claim(db, due, { leaseMs: 10_000 });
    expect(first.deliveries.map((x) => x.id)).toEqual([id]);
    // Leased: not asked while the lease holds; its lease ran out (its process died): claimed again.
    perDestination.length = 0;
    expect((await claim(db, new Date(due.getTime() + 9_000))).deliveries).toEqual([]);
    expect(perDestination).toEqual([]);
    const again = await claim(db, new Date(due.getTime() + 10_000));
    expect(again.deliveries.map((x) => [x.id, x.leaseToken])).toEqual([[id, 2]]);
  });

  test("a destination without a rate bucket row is still claimed from", async () => {
    const start = at(7_200_000);
    const d = await seedDestination(pool, source, start);
    await pool.query("DELETE FROM destination_rate_buckets WHERE destination_id = $1", [d]);
    const ids = await seedDeliveries(pool, d, await seedMessages(pool, source, start, ["y"]), start);
    expect((await claim(pool, start)).deliveries.map((x) => x.id)).toEqual(ids);
  });
});
