import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { citusJobTable } from "../../../../src/db/job-table/citus/index.js";
import { completeStatementSql } from "../../../../src/db/job-table/complete.js";
import { completionParameters } from "../../../../src/db/job-table/completion-records.js";
import { extendStatementSql } from "../../../../src/db/job-table/extend.js";
import type { ClaimedDelivery, DeliveryCompletion } from "../../../../src/db/job-table/index.js";
import type { Pool } from "../../../../src/db/pool.js";
import { citusSkipReason, citusUrl, openCitusTestDatabase } from "../../../helpers/citus.js";
import { seedDeliveries, seedDestination, seedMessages, seedSource, statuses } from "../../../helpers/citus-job-table.js";

// What a lease holder writes, on the cluster: heartbeats and results of
// deliveries of several destinations (so several shards) at once.
describe.skipIf(!citusUrl)(`heartbeats and completions on Citus${citusSkipReason}`, () => {
  let pool: Pool;
  let close: () => Promise<void>;
  let source: string;
  let first: string;
  let second: string;
  let claimed: ClaimedDelivery[];
  const now = new Date("2026-11-28T12:00:00Z");

  beforeAll(async () => {
    ({ pool, close } = await openCitusTestDatabase());
    source = await seedSource(pool);
    first = await seedDestination(pool, source, now);
    second = await seedDestination(pool, source, now);
    for (const destination of [first, second]) {
      await seedDeliveries(pool, destination, await seedMessages(pool, source, now, ["a", "b", "c", "d"]), now);
    }
    claimed = (
      await citusJobTable.claimDeliveries(pool, { now, limit: 100, perDestinationLimit: 100, room: new Map(), leaseMs: 10_000, owner: "t" })
    ).deliveries;
  }, 120_000);
  afterAll(async () => close?.());

  const of = (destination: string) => claimed.filter((d) => d.destinationId === destination);
  const completion = (
    d: ClaimedDelivery,
    status: DeliveryCompletion["status"],
    overrides: Partial<DeliveryCompletion> = {},
  ): DeliveryCompletion => ({
    destinationId: d.destinationId,
    id: d.id,
    leaseToken: d.leaseToken,
    status,
    runAt: new Date(now.getTime() + 60_000),
    attempted: true,
    attemptedAt: now,
    retryUrls: null,
    attempts: [
      {
        urlIndex: 0,
        url: "https://example.com/hook",
        attemptedAt: now,
        outcome: status === "delivered" ? "success" : "retryable",
        statusCode: 200,
        error: null,
        latencyMs: 5,
        responseBody: null,
      },
    ],
    ...overrides,
  });

  test("the heartbeat extends only the leases still held, on every destination's shard", async () => {
    expect(claimed).toHaveLength(8);
    const stale = { ...of(first)[0]!, leaseToken: 99 };
    const later = new Date(now.getTime() + 5_000);
    const extended = await citusJobTable.extendLeases(pool, later, 10_000, [stale, ...of(first).slice(1), ...of(second)]);
    expect([...extended].sort()).toEqual([...of(first).slice(1), ...of(second)].map((d) => d.id).sort());
    const until = await pool.query<{ id: string; leased_until: Date }>(
      "SELECT id, leased_until FROM delivery_queue WHERE destination_id = ANY($1)",
      [[first, second]],
    );
    for (const row of until.rows) {
      expect(row.leased_until.getTime()).toBe(row.id === stale.id ? now.getTime() + 10_000 : later.getTime() + 10_000);
    }
  });

  test("a completion batch moves finished deliveries to the history with their attempts, keeps retries queued, and ignores stale tokens", async () => {
    const [a0, a1, a2] = of(first);
    const [b0, b1] = of(second);
    const batch = { id: "0b7c1d5e-8f90-4a1b-9c2d-3e4f5a6b7c8d", calls: 2 };
    const batched = (d: ClaimedDelivery) =>
      completion(d, "delivered", {
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
            batch,
          },
        ],
      });
    const written = await citusJobTable.completeDeliveries(pool, [
      completion(a0!, "delivered"),
      completion(a1!, "retrying"),
      { ...completion(a2!, "delivered"), leaseToken: a2!.leaseToken + 5 },
      batched(b0!),
      batched(b1!),
    ]);
    expect([...written].sort()).toEqual([a0!.id, a1!.id, b0!.id, b1!.id].sort());
    const firstStatuses = await statuses(pool, first);
    expect(firstStatuses.get(a0!.id)).toBe("delivered");
    expect(firstStatuses.get(a1!.id)).toBe("retrying");
    expect(firstStatuses.get(a2!.id)).toBe("pending");
    const history = await pool.query("SELECT id FROM delivery_history WHERE destination_id = $1", [first]);
    expect(history.rows.map((row) => row.id)).toEqual([a0!.id]);
    const attempts = await pool.query<{ delivery_id: string; attempt: number }>(
      "SELECT delivery_id, attempt FROM delivery_attempts WHERE destination_id = $1 ORDER BY delivery_id",
      [first],
    );
    expect(attempts.rows).toEqual([a0!.id, a1!.id].sort().map((id) => ({ delivery_id: id, attempt: 1 })));
    const batches = await pool.query<{ deliveries: number; calls: number }>(
      "SELECT deliveries, calls FROM delivery_batch_attempts WHERE destination_id = $1",
      [second],
    );
    expect(batches.rows).toEqual([{ deliveries: 2, calls: 2 }]);
    const refs = await pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM delivery_history WHERE destination_id = $1 AND cardinality(batch_attempts) = 1",
      [second],
    );
    expect(refs.rows[0]!.n).toBe(2);
    // The same results again: their leases have ended, nothing is written twice.
    expect(await citusJobTable.completeDeliveries(pool, [completion(a0!, "delivered"), batched(b0!)])).toEqual(new Set());
  });

  test("a refused result is counted and handed back, and fails the delivery at the limit", async () => {
    const d = of(second)[2]!;
    const refused = (maxRefusals: number, leaseToken = d.leaseToken) =>
      citusJobTable.recordRefusedCompletion(pool, {
        completion: { ...completion(d, "delivered"), leaseToken },
        error: "refused",
        now,
        retryAt: new Date(now.getTime() + 1_000),
        maxRefusals,
      });
    expect(await refused(3)).toBe("pending");
    // Handed back: the lease ended, so the holder's second try changes nothing.
    expect(await refused(1)).toBeUndefined();
    const reclaimed = await citusJobTable.claimDeliveries(pool, {
      now: new Date(now.getTime() + 2_000),
      limit: 1,
      perDestinationLimit: 1,
      room: new Map([[first, 0]]),
      leaseMs: 10_000,
      owner: "t",
    });
    const again = reclaimed.deliveries.find((c) => c.id === d.id)!;
    expect(await refused(2, again.leaseToken)).toBe("failed");
    expect((await statuses(pool, second)).get(d.id)).toBe("failed");
  });

  test("the heartbeat runs as one router task; each step of a completion runs on the one shard", async () => {
    const extend = await pool.query<{ "QUERY PLAN": string }>(`EXPLAIN ${extendStatementSql("$6::uuid")}`, [
      now,
      1,
      [first],
      ["1"],
      [1],
      first,
    ]);
    const extendLines = extend.rows.map((row) => row["QUERY PLAN"].trim());
    expect(extendLines.filter((line) => line.startsWith("Task Count"))).toEqual(["Task Count: 1"]);
    const parameters = completionParameters([completion(of(first)[3]!, "delivered")]);
    const complete = await pool.query<{ "QUERY PLAN": string }>(`EXPLAIN ${completeStatementSql("$3::uuid")}`, [
      parameters.records,
      parameters.batchRows,
      first,
    ]);
    const lines = complete.rows.map((row) => row["QUERY PLAN"].trim());
    const tasks = lines.filter((line) => line.startsWith("Task Count"));
    expect(tasks.length).toBeGreaterThan(0);
    expect(new Set(tasks)).toEqual(new Set(["Task Count: 1"]));
    const nodes = new Set(lines.filter((line) => line.startsWith("Node:") && !/port=39500/.test(line)));
    expect(nodes.size).toBe(1);
  });
});
