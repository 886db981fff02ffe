import { expect } from "vitest";
import { analyzeJobTableIfStale, claimDeliveries, completeDeliveries, extendLeases } from "../../../src/db/job-table/index.js";
import type { PoolClient } from "../../../src/db/pool.js";
import { testWith } from "../../helpers/fixtures.js";
import { seedSourceAndDestination } from "../../helpers/job-table-fixtures.js";

// A queue that fills after the service has been running on an almost empty
// one (a backfill, an endpoint's outage): the claim, the heartbeat and the
// completion must read the rows they take, not the lane. As prepared
// statements they kept the generic plans made while the queue was nearly
// empty until its next ANALYZE, and those read every queued row of the lane
// for each delivery: 700 ms per claim of 500 at 20,000 queued (20 million
// rows read here).
const test = testWith();
let source: string;
let destination: string;
const filled = 20_000;
let queuedSoFar = 0;

test.beforeAll(async ({ pool }) => {
  ({ sourceId: source, destinationId: destination } = await seedSourceAndDestination(pool, new Date()));
  await pool.query("ANALYZE");
}, 120_000);

/** Queues `count` due deliveries of the destination, all with the same run_at (as a backfill's batch has). */
async function queue(client: PoolClient, count: number): Promise<void> {
  await client.query(
    `WITH m AS (
       INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
       SELECT $1, 'm' || g, 'track', 'user-' || g, now() - interval '1 hour', '{}'
         FROM generate_series($3::int + 1, $3::int + $4::int) g
       RETURNING id
     )
     INSERT INTO delivery_queue (destination_id, message_pk, source_id, run_at, created_at)
     SELECT $2, m.id, $1, now() - interval '1 minute', now() FROM m`,
    [source, destination, queuedSoFar, count],
  );
  queuedSoFar += count;
}

/** Claims up to `limit`, heartbeats the leases and completes them as delivered; how many it took. */
async function cycle(client: PoolClient, limit: number): Promise<number> {
  const now = new Date();
  const { deliveries } = await claimDeliveries(client, {
    now,
    limit,
    perDestinationLimit: limit,
    room: new Map(),
    leaseMs: 60_000,
    owner: "test",
  });
  const leases = deliveries.map((d) => ({ destinationId: d.destinationId, id: d.id, leaseToken: d.leaseToken }));
  expect((await extendLeases(client, now, 60_000, leases)).size).toBe(deliveries.length);
  const completed = await completeDeliveries(
    client,
    leases.map((lease) => ({
      ...lease,
      status: "delivered",
      runAt: now,
      attempted: true,
      attemptedAt: now,
      retryUrls: null,
      attempts: [
        {
          urlIndex: 0,
          url: "http://h/",
          attemptedAt: now,
          outcome: "success",
          statusCode: 200,
          error: null,
          latencyMs: 1,
          responseBody: null,
        },
      ],
    })),
  );
  expect(completed.size).toBe(deliveries.length);
  return deliveries.length;
}

/** Rows of delivery_queue read so far by sequential and index scans, as `client`'s session sees them. */
async function queueRowsRead(client: PoolClient): Promise<number> {
  await client.query("SELECT pg_stat_force_next_flush()");
  await client.query("SELECT pg_stat_clear_snapshot()");
  const { rows } = await client.query<{ n: string }>(
    `SELECT (coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::bigint AS n
       FROM pg_stat_user_tables WHERE relname = 'delivery_queue'`,
  );
  return Number(rows[0]!.n);
}

test("after running on an almost empty queue, claims, heartbeats and completions read only what they take once it fills", async ({
  pool,
}) => {
  const client = await pool.connect();
  try {
    // Enough runs on a few rows for a prepared statement to settle on a generic plan.
    for (let i = 0; i < 8; i++) {
      await queue(client, 2);
      expect(await cycle(client, 100)).toBe(2);
    }
    await queue(client, filled);

    // Until the queue is analyzed again (maintenance checks every 2 s), a
    // claim planned from the old statistics may read the whole lane once
    // (a bitmap scan, then a sort), but never once per delivery taken.
    let before = await queueRowsRead(client);
    let taken = 0;
    for (let i = 0; i < 3; i++) taken += await cycle(client, 200);
    expect(taken).toBe(600);
    expect((await queueRowsRead(client)) - before).toBeLessThan(3 * (filled + 1_000));

    // Analyzed (as maintenance does once this many rows have changed): 600
    // deliveries taken, each read a few times (lane scan, lock, lease,
    // heartbeat, completion).
    expect(await analyzeJobTableIfStale(client)).toBe(true);
    before = await queueRowsRead(client);
    for (let i = 0; i < 3; i++) taken += await cycle(client, 200);
    expect(taken).toBe(1_200);
    expect((await queueRowsRead(client)) - before).toBeLessThan(filled / 4);
  } finally {
    client.release();
  }
});
