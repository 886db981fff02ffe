import { afterAll, beforeAll, expect, test } from "vitest";
import { ManualClock } from "../../src/clock.js";
import type { Pool } from "../../src/db/pool.js";
import { createBackfiller } from "../../src/delivery/backfiller.js";
import { createLogger } from "../../src/logger.js";
import { compileFilter } from "../../src/routing/filter.js";
import { openTestDatabase, type TestDatabase } from "../helpers/database.js";

// The backfiller pages through the range's calls (batches of two here, the
// filter over slices of one), skips calls with a delivery finished or still
// waiting, and queues the rest in acceptance order.
let database: TestDatabase;
let pool: Pool;
const source = "00000000-0000-4000-8000-000000000001";
const destination = "00000000-0000-4000-8000-0000000000e5";
const now = new Date("2026-11-27T12:00:00Z");

beforeAll(async () => {
  ({ database, pool } = await openTestDatabase());
  await pool.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 's', 'x')", [source]);
  await pool.query(
    `INSERT INTO destinations (id, name, enabled, webhooks) VALUES ($1, 'crm', false, '[{"url":"http://h/","headers":{}}]')`,
    [destination],
  );
  await pool.query("INSERT INTO destination_sources (source_id, destination_id) VALUES ($1, $2)", [source, destination]);
  // Seven calls, m1 to m7, a minute apart; odd ones have total 500, even ones 5.
  await pool.query(
    `INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
     SELECT $1, 'm' || g, 'track', 'u', $2::timestamptz - interval '1 hour' + g * interval '1 minute',
            json_build_object('type', 'track', 'event', 'Order Completed', 'properties', json_build_object('total', CASE WHEN g % 2 = 1 THEN 500 ELSE 5 END))::text
       FROM generate_series(1, 7) g`,
    [source, now],
  );
  // m3 already waits in the queue; m5 was delivered.
  await pool.query(
    `INSERT INTO delivery_queue (destination_id, message_pk, source_id, run_at, created_at)
     SELECT $1, id, source_id, $2, $2 FROM messages WHERE message_id = 'm3'`,
    [destination, now],
  );
  await pool.query(
    `INSERT INTO delivery_history (destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count, lease_token)
     SELECT $1, nextval('delivery_ids'), id, source_id, 'delivered', $2, $2, 1, 1 FROM messages WHERE message_id = 'm5'`,
    [destination, now],
  );
}, 60_000);
afterAll(async () => {
  await pool?.end();
  await database?.drop();
});

const messageIdsQueued = async () =>
  (
    await pool.query<{ message_id: string }>(
      "SELECT m.message_id FROM delivery_queue q JOIN messages m ON m.id = q.message_pk WHERE q.destination_id = $1 ORDER BY q.id",
      [destination],
    )
  ).rows.map((r) => r.message_id);

test("a backfill in small batches queues each passing call once, skipping those waiting or finished, in acceptance order", async () => {
  const backfiller = createBackfiller({ pool, clock: new ManualClock(now), logger: createLogger("silent"), batchSize: 2, sliceSize: 1 });
  const backfill = {
    destinationId: destination,
    since: new Date(now.getTime() - 2 * 3_600_000),
    until: now,
    matches: compileFilter({ "properties.total": { $gt: 100 } }),
  };
  backfiller.start(backfill);
  await backfiller.idle();
  // m1 and m7 pass and were missing; m3 was already waiting (kept, not doubled); m5 was delivered.
  expect(await messageIdsQueued()).toEqual(["m3", "m1", "m7"]);
  backfiller.start(backfill);
  await backfiller.idle();
  expect(await messageIdsQueued()).toEqual(["m3", "m1", "m7"]);
});
