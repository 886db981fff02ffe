import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { claimStatementSql } from "../../../../src/db/job-table/claim.js";
import { citusJobTable } from "../../../../src/db/job-table/citus/index.js";
import type { Pool } from "../../../../src/db/pool.js";
import { citusSkipReason, citusUrl, openCitusTestDatabase } from "../../../helpers/citus.js";
import { seedDeliveries, seedDestination, seedMessages, seedSource } from "../../../helpers/job-table-rows.js";

// What only the Citus claim does: it claims destination by destination,
// each on its shard (the rules both drivers keep are in
// ../driver-contract/claim.test.ts).
describe.skipIf(!citusUrl)(`the claim on Citus${citusSkipReason}`, () => {
  let pool: Pool;
  let close: () => Promise<void>;
  let source: string;
  const now = new Date("2026-11-28T12:00:00Z");

  beforeAll(async () => {
    ({ pool, close } = await openCitusTestDatabase());
    source = await seedSource(pool);
  }, 120_000);
  afterAll(async () => close?.());

  test("rotates the destination it starts with", async () => {
    const [a, b] = [await seedDestination(pool, source, now), await seedDestination(pool, source, now)];
    for (const destination of [a, b]) {
      await seedDeliveries(pool, destination, await seedMessages(pool, source, now, ["1", "2", "3"]), now);
    }
    // limit 1: consecutive claims start at different destinations.
    const starts = new Set<string>();
    for (let i = 0; i < 2; i++) {
      const one = await citusJobTable.claimDeliveries(pool, {
        now,
        limit: 1,
        perDestinationLimit: 3,
        room: new Map(),
        leaseMs: 30_000,
        owner: "t",
      });
      expect(one.deliveries).toHaveLength(1);
      starts.add(one.deliveries[0]!.destinationId);
    }
    expect(starts).toEqual(new Set([a, b]));
  });

  test("the per-destination claim statement is one router task on one shard", async () => {
    const destination = await seedDestination(pool, source, now);
    const plan = await pool.query<{ "QUERY PLAN": string }>(`EXPLAIN ${claimStatementSql("$8::uuid", "$9")}`, [
      now,
      10,
      10,
      30_000,
      "t",
      [],
      [],
      destination,
      [],
    ]);
    const lines = plan.rows.map((row) => row["QUERY PLAN"]);
    expect(lines.filter((line) => /Task Count/.test(line)).map((line) => line.trim())).toEqual(["Task Count: 1"]);
    expect(lines.some((line) => /Distributed Subplan/.test(line))).toBe(false);
  });
});
