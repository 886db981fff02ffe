import { expect } from "vitest";
import { claimDeliveries, extendLeases } from "../../../src/db/job-table/index.js";
import type { Pool } from "../../../src/db/pool.js";
import { testWith } from "../../helpers/fixtures.js";

// The claim and the heartbeat must find the queue's rows by key and tuple
// id whatever the planner estimates: with 60,000 queued, statistics of a
// queue at rest (no leases) and hundreds of leases held, plans joining the
// leases to the queue on the key scanned the whole queue in every claim and
// every heartbeat (a burn-down then ran at a third of the bare loop's rate).
const test = testWith();
const now = new Date("2026-11-27T12:00:00Z");
const source = "00000000-0000-4000-8000-000000000001";
const destination = "00000000-0000-4000-8000-0000000000e5";
const queued = 60_000;

test.beforeAll(async ({ pool }) => {
  await pool.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 's', 'x')", [source]);
  await pool.query(
    `INSERT INTO destinations (id, name, enabled, webhooks) VALUES ($1, 'plain', true, '[{"url":"http://h/","headers":{}}]')`,
    [destination],
  );
  await pool.query(
    `WITH m AS (
       INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
       SELECT $1, 'm' || g, 'track', 'user-' || g, $2::timestamptz - interval '1 hour' + g * interval '1 ms', '{}'
         FROM generate_series(1, ${queued}) g
       RETURNING id, received_at
     )
     INSERT INTO delivery_queue (destination_id, message_pk, source_id, run_at, created_at)
     SELECT $3, m.id, $1, m.received_at, m.received_at FROM m`,
    [source, now, destination],
  );
  await pool.query("ANALYZE");
}, 120_000);

/** Rows of delivery_queue read by sequential scans so far, as the statistics of `client`'s session see them. */
async function queueRowsScanned(client: { query: Pool["query"] }): Promise<number> {
  await client.query("SELECT pg_stat_force_next_flush()");
  await client.query("SELECT pg_stat_clear_snapshot()");
  const { rows } = await client.query<{ n: string }>(
    "SELECT coalesce(seq_tup_read, 0)::bigint AS n FROM pg_stat_user_tables WHERE relname = 'delivery_queue'",
  );
  return Number(rows[0]!.n);
}

test("claims and heartbeats of hundreds of leases read the rows they take, not the queue", async ({ pool }) => {
  const client = await pool.connect();
  try {
    const before = await queueRowsScanned(client);
    const held = [];
    for (let i = 0; i < 3; i++) {
      const { deliveries } = await claimDeliveries(client, {
        now,
        limit: 250,
        perDestinationLimit: 250,
        room: new Map(),
        leaseMs: 60_000,
        owner: "test",
      });
      expect(deliveries).toHaveLength(250);
      held.push(...deliveries);
      const extended = await extendLeases(
        client,
        now,
        60_000,
        held.map((d) => ({ destinationId: d.destinationId, id: d.id, leaseToken: d.leaseToken })),
      );
      expect(extended.size).toBe(held.length);
    }
    expect(new Set(held.map((d) => d.id)).size).toBe(750);
    // Three claims and three heartbeats: a scan of the queue in any of them reads 60,000 rows.
    const scanned = (await queueRowsScanned(client)) - before;
    expect(scanned).toBeLessThan(queued / 2);
  } finally {
    client.release();
  }
});
