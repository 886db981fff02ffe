import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { citusJobTable } from "../../../../src/db/job-table/citus/index.js";
import { completeStatementSql } from "../../../../src/db/job-table/complete.js";
import { completionParameters } from "../../../../src/db/job-table/completion-records.js";
import { extendStatementSql } from "../../../../src/db/job-table/extend.js";
import type { ClaimedDelivery } from "../../../../src/db/job-table/index.js";
import type { Pool } from "../../../../src/db/pool.js";
import { citusSkipReason, citusUrl, openCitusTestDatabase } from "../../../helpers/citus.js";
import { seedDeliveries, seedDestination, seedMessages, seedSource } from "../../../helpers/job-table-rows.js";

// Where a lease holder's writes run on the cluster: each step on the one
// shard of its destination (what they write, both drivers alike, is in
// ../driver-contract/lease.test.ts).
describe.skipIf(!citusUrl)(`heartbeats and completions on Citus${citusSkipReason}`, () => {
  let pool: Pool;
  let close: () => Promise<void>;
  let destination: string;
  let claimed: ClaimedDelivery;
  const now = new Date("2026-11-28T12:00:00Z");

  beforeAll(async () => {
    ({ pool, close } = await openCitusTestDatabase());
    const source = await seedSource(pool);
    destination = await seedDestination(pool, source, now);
    await seedDeliveries(pool, destination, await seedMessages(pool, source, now, ["a"]), now);
    const claim = { now, limit: 1, perDestinationLimit: 1, room: new Map(), leaseMs: 10_000, owner: "t" };
    claimed = (await citusJobTable.claimDeliveries(pool, claim)).deliveries[0]!;
  }, 120_000);
  afterAll(async () => close?.());

  const explain = async (sql: string, values: unknown[]) =>
    (await pool.query<{ "QUERY PLAN": string }>(`EXPLAIN ${sql}`, values)).rows.map((row) => row["QUERY PLAN"].trim());

  test("the heartbeat runs as one router task; each step of a completion runs on the one shard", async () => {
    const extend = await explain(extendStatementSql("$6::uuid"), [now, 1, [destination], [claimed.id], [claimed.leaseToken], destination]);
    expect(extend.filter((line) => line.startsWith("Task Count"))).toEqual(["Task Count: 1"]);
    const parameters = completionParameters([
      {
        destinationId: destination,
        id: claimed.id,
        leaseToken: claimed.leaseToken,
        status: "delivered",
        runAt: now,
        attempted: true,
        attemptedAt: now,
        retryUrls: null,
        attempts: [
          {
            urlIndex: 0,
            url: "https://example.com/hook",
            attemptedAt: now,
            outcome: "success",
            statusCode: 200,
            error: null,
            latencyMs: 5,
            responseBody: null,
          },
        ],
      },
    ]);
    const complete = await explain(completeStatementSql("$3::uuid"), [parameters.records, parameters.batchRows, destination]);
    const tasks = complete.filter((line) => line.startsWith("Task Count"));
    expect(tasks.length).toBeGreaterThan(0);
    expect(new Set(tasks)).toEqual(new Set(["Task Count: 1"]));
    // Every task on one worker (the coordinator's own lines aside).
    const coordinator = `port=${new URL(citusUrl!).port}`;
    const nodes = new Set(complete.filter((line) => line.startsWith("Node:") && !line.includes(coordinator)));
    expect(nodes.size).toBe(1);
  });
});
