import { expect } from "vitest";
import { analyzeJobTableIfStale } from "../../../src/db/job-table/index.js";
import type { Pool } from "../../../src/db/pool.js";
import { testWith } from "../../helpers/fixtures.js";

// The queue's statistics are taken anew once its rows have changed a lot
// since they were taken (whether or not autovacuum runs): prepared claims
// are planned from them, and a plan for an empty queue kept while it fills
// makes every claim read the whole queue.
const test = testWith();
const source = "00000000-0000-4000-8000-000000000001";
const destination = "00000000-0000-4000-8000-0000000000e5";

test.beforeAll(async ({ pool }) => {
  await pool.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 's', 'x')", [source]);
  await pool.query(`INSERT INTO destinations (id, name, enabled, webhooks) VALUES ($1, 'd', true, '[{"url":"http://h/","headers":{}}]')`, [
    destination,
  ]);
  // Autovacuum (on in the embedded Postgres) must not analyze behind the test's back.
  await pool.query("ALTER TABLE delivery_queue SET (autovacuum_enabled = false)");
  await pool.query("ANALYZE delivery_queue");
}, 60_000);

async function queue(pool: Pool, count: number) {
  const client = await pool.connect();
  try {
    await client.query(
      `WITH m AS (
         INSERT INTO messages (source_id, message_id, type, received_at, payload)
         SELECT $1, 'm' || g || '-' || $3, 'track', now(), '{}' FROM generate_series(1, $3::int) g RETURNING id
       )
       INSERT INTO delivery_queue (destination_id, message_pk, source_id, run_at, created_at)
       SELECT $2, m.id, $1, now(), now() FROM m`,
      [source, destination, count],
    );
    await client.query("SELECT pg_stat_force_next_flush()");
  } finally {
    client.release();
  }
}

const estimatedRows = async (pool: Pool) =>
  Number((await pool.query("SELECT reltuples FROM pg_class WHERE relname = 'delivery_queue'")).rows[0].reltuples);

test("the queue is analyzed once its rows changed by more than 10,000 and a fifth, and not again until they change more", async ({
  pool,
}) => {
  await queue(pool, 5_000);
  expect(await analyzeJobTableIfStale(pool)).toBe(false);
  await queue(pool, 20_000);
  expect(await analyzeJobTableIfStale(pool)).toBe(true);
  expect(await estimatedRows(pool)).toBe(25_000);
  expect(await analyzeJobTableIfStale(pool)).toBe(false);
});
