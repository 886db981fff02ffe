import { expect } from "vitest";
import { claimDeliveries, type ClaimOptions } from "../../src/db/job-table/index.js";
import { claimStatement as captureClaim } from "../helpers/claim-statement.js";
import { testWith } from "../helpers/fixtures.js";

// The claim statement on a job table of 100,000 unfinished deliveries, with
// per-user ordering and a rate limit in play: its plan must stay on index
// lookups, and what it takes must follow both rules.
const test = testWith();
const now = new Date("2026-11-22T12:00:00Z");
const source = "00000000-0000-4000-8000-000000000001";
const orderedId = "00000000-0000-4000-8000-0000000000a1";
const limitedId = "00000000-0000-4000-8000-0000000000b2";
const plainId = "00000000-0000-4000-8000-0000000000c3";

test.beforeAll(async ({ pool }) => {
  await pool.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 's', 'x')", [source]);
  await pool.query(
    `INSERT INTO destinations (id, name, enabled, webhooks, max_requests_per_second, ordering)
     VALUES ($1, 'ordered', true, '[{"url":"http://h/","headers":{}}]', 0, 'per_user'),
            ($2, 'limited', true, '[{"url":"http://h/","headers":{}}]', 1000, 'none'),
            ($3, 'plain', true, '[{"url":"http://h/","headers":{}}]', 0, 'none')`,
    [orderedId, limitedId, plainId],
  );
  // Waypost writes a destination's rate bucket with it (insertDestination); rows written by hand need theirs.
  await pool.query("INSERT INTO destination_rate_buckets (destination_id, tokens, refilled_at) SELECT id, 0, created_at FROM destinations");
  // 100,000 calls of 2,000 users, 50 each, interleaved, all due; each to the
  // ordered destination, and every fifth also to the other two.
  await pool.query(
    `INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
     SELECT $1, 'm' || g, 'track', 'user-' || (g % 2000), $2::timestamptz - interval '1 hour' + g * interval '1 ms', '{}'
       FROM generate_series(1, 100000) g`,
    [source, now],
  );
  await pool.query(
    `INSERT INTO delivery_queue (destination_id, message_pk, source_id, run_at, created_at, ordering_key)
     SELECT d.id, m.id, m.source_id, m.received_at, m.received_at, m.user_id
       FROM messages m CROSS JOIN (VALUES ($1::uuid, 1), ($2::uuid, 5), ($3::uuid, 5)) AS d(id, every)
      WHERE m.id % d.every = 0
      ORDER BY m.id, d.id`,
    [orderedId, limitedId, plainId],
  );
  // Each user's first delivery to the ordered destination is retrying, due
  // only in an hour: everything after it waits, though due.
  await pool.query(
    `UPDATE delivery_queue SET status = 'retrying', run_at = $2::timestamptz + interval '1 hour', attempt_count = 1
      WHERE destination_id = $1 AND id IN (SELECT min(id) FROM delivery_queue WHERE destination_id = $1 AND ordering_key LIKE 'user-1%' GROUP BY ordering_key)`,
    [orderedId, now],
  );
  await pool.query("UPDATE destination_rate_buckets SET tokens = 300, refilled_at = $2 WHERE destination_id = $1", [limitedId, now]);
  await pool.query("ANALYZE");
}, 120_000);

const options: ClaimOptions = { now, limit: 500, perDestinationLimit: 256, room: new Map(), leaseMs: 60_000, owner: "test" };

const claimStatement = () => captureClaim(options);

test("the claim plan follows indexes on 100,000 deliveries with ordering and a rate limit on", async ({ pool }) => {
  const { text, values } = await claimStatement();
  const plan = (await pool.query(`EXPLAIN ${text}`, values)).rows.map((r) => r["QUERY PLAN"] as string).join("\n");
  expect(plan).toMatch(/Index (Only )?Scan using delivery_queue_lane_idx on delivery_queue d(_\d+)?\b/);
  // The per-user rule is an index probe per candidate, never a join over the table.
  expect(plan).toMatch(/Index (Only )?Scan using delivery_queue_ordering_idx on delivery_queue e\b/);
  expect(plan).not.toMatch(/Seq Scan on delivery_queue/);
});

test("prepared, the claim keeps to the same indexes when Postgres switches to its generic plan", async ({ pool }) => {
  // After five runs of a prepared statement Postgres may plan it once for
  // any parameters; that plan must not fall back to scanning the table.
  const { text, values } = await claimStatement();
  const literal = (v: unknown) =>
    v instanceof Date
      ? `'${v.toISOString()}'`
      : Array.isArray(v)
        ? `'{${v.join(",")}}'`
        : typeof v === "number"
          ? String(v)
          : `'${String(v)}'`;
  const client = await pool.connect();
  let plan: string;
  try {
    await client.query("SET plan_cache_mode = force_generic_plan");
    await client.query(`PREPARE generic_claim AS ${text}`);
    const explained = await client.query(`EXPLAIN EXECUTE generic_claim(${values.map(literal).join(", ")})`);
    plan = explained.rows.map((r) => r["QUERY PLAN"] as string).join("\n");
    await client.query("DEALLOCATE generic_claim; RESET plan_cache_mode");
  } finally {
    client.release();
  }
  // A generic plan keeps the parameters as such.
  expect(plan).toMatch(/run_at <= \$1/);
  expect(plan).toMatch(/Index (Only )?Scan using delivery_queue_lane_idx on delivery_queue d(_\d+)?\b/);
  expect(plan).toMatch(/Index (Only )?Scan using delivery_queue_ordering_idx on delivery_queue e\b/);
  expect(plan).not.toMatch(/Seq Scan on delivery_queue/);
});

test("a claim takes one delivery per user of the ordered destination and no more than the tokens of the limited one", async ({ pool }) => {
  const before = await pool.query(
    `SELECT count(*)::int AS n FROM deliveries WHERE destination_id = $1 AND status = 'pending' AND leased_until IS NULL`,
    [orderedId],
  );
  const { deliveries, refillWaitMs } = await claimDeliveries(pool, { ...options, limit: 2_000, perDestinationLimit: 2_000 });
  const byDestination = (id: string) => deliveries.filter((d) => d.destinationId === id);
  const ordered = byDestination(orderedId);
  expect(ordered.length).toBeGreaterThan(0);
  // Each is its user's earliest unfinished delivery, and none waits behind a retrying one.
  const heads = await pool.query<{ id: string }>(
    `SELECT min(id)::text AS id FROM deliveries WHERE destination_id = $1 AND status IN ('pending', 'retrying')
      GROUP BY ordering_key`,
    [orderedId],
  );
  const headIds = new Set(heads.rows.map((r) => r.id));
  expect(ordered.every((d) => headIds.has(d.id))).toBe(true);
  expect(before.rows[0].n).toBeGreaterThan(ordered.length * 10);
  // The limited destination had 300 tokens.
  expect(byDestination(limitedId)).toHaveLength(300);
  const bucket = await pool.query("SELECT tokens, refilled_at FROM destination_rate_buckets WHERE destination_id = $1", [limitedId]);
  expect(bucket.rows[0].tokens).toBe(0);
  expect(bucket.rows[0].refilled_at).toEqual(now);
  // A wake-up's worth (125 tokens at 1,000/s) is 125 ms away.
  expect(refillWaitMs).toBeCloseTo(125, 5);
  expect(byDestination(plainId).length).toBeGreaterThan(300);

  // Nothing more of the ordered users' until their heads finish; the bucket
  // refills with time: 50 ms at 1,000/s is 50 tokens.
  const later = new Date(now.getTime() + 50);
  const again = await claimDeliveries(pool, { ...options, now: later, owner: "other", limit: 2_000, perDestinationLimit: 2_000 });
  expect(again.deliveries.filter((d) => d.destinationId === orderedId)).toHaveLength(0);
  expect(again.deliveries.filter((d) => d.destinationId === limitedId)).toHaveLength(50);
});

test("a delivery with no user key is not held by earlier ones", async ({ pool }) => {
  const message = await pool.query(
    `INSERT INTO messages (source_id, message_id, type, received_at, payload) VALUES ($1, 'no-user', 'track', $2, '{}') RETURNING id`,
    [source, now],
  );
  const inserted = await pool.query<{ id: string }>(
    `INSERT INTO delivery_queue (destination_id, message_pk, source_id, run_at, created_at, ordering_key)
     VALUES ($1, $2, $3, $4, $4, NULL) RETURNING id::text`,
    [orderedId, message.rows[0].id, source, new Date(now.getTime() - 2 * 3_600_000)],
  );
  const { deliveries } = await claimDeliveries(pool, { ...options, now: new Date(now.getTime() + 1_000), owner: "third" });
  expect(deliveries.map((d) => d.id)).toContain(inserted.rows[0]!.id);
});
