import { expect } from "vitest";
import { claimDeliveries, type ClaimOptions } from "../../../src/db/job-table/index.js";
import { claimStatement as captureClaim } from "../../helpers/claim-statement.js";
import { testWith } from "../../helpers/fixtures.js";

// The claim picks destinations first and reads only their deliveries: the
// due backlog of a destination it cannot take from (throttled, backing off,
// disabled, at its room) is never read, however old and large it is.
const test = testWith();
const now = new Date("2026-11-22T12:00:00Z");
const source = "00000000-0000-4000-8000-000000000001";
const throttledId = "00000000-0000-4000-8000-0000000000a1";
const heldId = "00000000-0000-4000-8000-0000000000b2";
const disabledId = "00000000-0000-4000-8000-0000000000c3";
const fullId = "00000000-0000-4000-8000-0000000000d4";
const plainId = "00000000-0000-4000-8000-0000000000e5";
const backlogs: [string, number][] = [
  [throttledId, 50_000],
  [heldId, 20_000],
  [disabledId, 20_000],
  [fullId, 20_000],
];

test.beforeAll(async ({ pool }) => {
  await pool.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 's', 'x')", [source]);
  await pool.query(
    `INSERT INTO destinations (id, name, enabled, webhooks, max_requests_per_second)
     VALUES ($1, 'throttled', true, '[{"url":"http://h/","headers":{}}]', 1000),
            ($2, 'held', true, '[{"url":"http://h/","headers":{}}]', 0),
            ($3, 'disabled', false, '[{"url":"http://h/","headers":{}}]', 0),
            ($4, 'full', true, '[{"url":"http://h/","headers":{}}]', 0),
            ($5, 'plain', true, '[{"url":"http://h/","headers":{}}]', 0)`,
    [throttledId, heldId, disabledId, fullId, plainId],
  );
  // Waypost writes a destination's rate bucket with it (insertDestination); rows written by hand need theirs.
  await pool.query("INSERT INTO destination_rate_buckets (destination_id, tokens, refilled_at) SELECT id, 0, created_at FROM destinations");
  await pool.query(
    `INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
     SELECT $1, 'm' || g, 'track', 'user-' || (g % 500), $2::timestamptz - interval '1 hour' + g * interval '1 ms', '{}'
       FROM generate_series(1, 111000) g`,
    [source, now],
  );
  // The backlogs come first in run_at order, the plain destination's 1,000
  // deliveries after all of them.
  let first = 1;
  for (const [id, count] of [...backlogs, [plainId, 1_000] as [string, number]]) {
    await pool.query(
      `INSERT INTO delivery_queue (destination_id, message_pk, source_id, run_at, created_at, ordering_key)
       SELECT $1, m.id, m.source_id, m.received_at, m.received_at, m.user_id
         FROM messages m WHERE m.id >= $2 AND m.id < $3 ORDER BY m.id`,
      [id, first, first + count],
    );
    first += count;
  }
  // The throttled destination has no whole token; the held one backs off.
  await pool.query("UPDATE destination_rate_buckets SET tokens = 0.5, refilled_at = $2 WHERE destination_id = $1", [throttledId, now]);
  await pool.query("INSERT INTO destination_health (destination_id, backoff_until, updated_at) VALUES ($1, $2, $3)", [
    heldId,
    new Date(now.getTime() + 60_000),
    now,
  ]);
  await pool.query("ANALYZE");
}, 120_000);

const options: ClaimOptions = { now, limit: 500, perDestinationLimit: 256, room: new Map([[fullId, 0]]), leaseMs: 60_000, owner: "test" };

const claimStatement = () => captureClaim(options);

interface PlanNode {
  "Relation Name"?: string;
  "Actual Rows"?: number;
  "Actual Loops"?: number;
  "Rows Removed by Filter"?: number;
  Plans?: PlanNode[];
}

/** Rows every scan of `delivery_queue` produced or filtered out, in all its loops. */
function deliveryRowsRead(node: PlanNode): number {
  const own =
    node["Relation Name"] === "delivery_queue"
      ? ((node["Actual Rows"] ?? 0) + (node["Rows Removed by Filter"] ?? 0)) * (node["Actual Loops"] ?? 1)
      : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + deliveryRowsRead(child), 0);
}

test("a claim does not read the due backlogs of destinations it cannot take from", async ({ pool }) => {
  const { text, values } = await claimStatement();
  const client = await pool.connect();
  let plan: PlanNode;
  try {
    // EXPLAIN ANALYZE runs the claim: roll it back.
    await client.query("BEGIN");
    const explained = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, values);
    plan = (explained.rows[0]["QUERY PLAN"] as { Plan: PlanNode }[])[0]!.Plan;
    await client.query("ROLLBACK");
  } finally {
    client.release();
  }
  // 110,000 older due deliveries of the four others; what is read is about
  // the 256 claimed (the lane scan, the lock and the lease), not them.
  const read = deliveryRowsRead(plan);
  expect(read).toBeGreaterThanOrEqual(256);
  expect(read).toBeLessThan(5_000);
});

test("the claim takes the plain destination's oldest deliveries and nothing of the others", async ({ pool }) => {
  const { deliveries } = await claimDeliveries(pool, options);
  expect(deliveries).toHaveLength(256);
  expect(new Set(deliveries.map((d) => d.destinationId))).toEqual(new Set([plainId]));
  const oldest = await pool.query<{ id: string }>("SELECT id::text FROM deliveries WHERE destination_id = $1 ORDER BY run_at LIMIT 256", [
    plainId,
  ]);
  expect(new Set(deliveries.map((d) => d.id))).toEqual(new Set(oldest.rows.map((r) => r.id)));
  // The throttled destination's half token stays.
  const bucket = await pool.query("SELECT tokens FROM destination_rate_buckets WHERE destination_id = $1", [throttledId]);
  expect(bucket.rows[0].tokens).toBe(0.5);
});

test("a destination's room past the default hold is taken whole when it has no rate limit (a batching kind's batch)", async ({ pool }) => {
  // 744 of the plain destination's deliveries are still due (the test above leased 256).
  const { deliveries } = await claimDeliveries(pool, {
    ...options,
    perDestinationLimit: 256,
    room: new Map([
      [fullId, 0],
      [plainId, 900],
    ]),
  });
  expect(deliveries).toHaveLength(500);
  expect(new Set(deliveries.map((d) => d.destinationId))).toEqual(new Set([plainId]));
});
