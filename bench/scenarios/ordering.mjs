// @ts-check
import pg from "pg";
import { createSourceAndDestination, rpc, setEnabled } from "../lib/admin.mjs";
import { startService } from "../lib/service.mjs";
import { report } from "../lib/stats.mjs";
import { waitForStatus } from "./burn-down.mjs";

/**
 * Per-user ordering: a burn-down of `count` queued deliveries spread over
 * `users` users (calls interleaved, as many clients would send them), once
 * with ordering off and once with ORDERING_PER_USER, in the same service and
 * run. With ordering on, each user has at most one delivery in flight, and
 * the next is claimed only after the previous one is recorded.
 * @param {{ db: import("../lib/postgres.mjs").Database, sink: import("../lib/sink.mjs").Sink, count: number, users?: number, concurrency?: number }} options
 */
export async function orderingScenario({ db, sink, count, users = 10_000, concurrency = 64 }) {
  const service = await startService(db.url, { WAYPOST_DESTINATION_CONCURRENCY: String(concurrency) });
  const pool = new pg.Pool({ connectionString: db.url, max: 4 });
  const off = await burnDown(service, pool, sink, { count, users, ordering: "ORDERING_NONE", name: "ordering-off" });
  const on = await burnDown(service, pool, sink, { count, users, ordering: "ORDERING_PER_USER", name: "ordering-on" });
  const rss = service.peakRssMb();
  await service.stop();
  await pool.end();
  report({
    scenario: "ordering_burn_down",
    deliveries: count,
    users,
    concurrency,
    ordering_off_per_s: off,
    ordering_on_per_s: on,
    ratio: Math.round((on / off) * 100) / 100,
    target_ratio: 0.7,
    server_peak_rss_mb: rss,
  });
  return { off, on, rss };
}

/**
 * @param {import("../lib/service.mjs").Service} service
 * @param {pg.Pool} pool
 * @param {import("../lib/sink.mjs").Sink} sink
 * @param {{ count: number, users: number, ordering: "ORDERING_NONE" | "ORDERING_PER_USER", name: string }} options
 */
async function burnDown(service, pool, sink, { count, users, ordering, name }) {
  const { source, destination } = await createSourceAndDestination(service.url, `${sink.url}/ok`, { name, enabled: false });
  await rpc(service.url, "DestinationService/UpdateDestination", {
    destination: { id: destination.id, ordering },
    updateMask: "ordering",
  });
  await queueUserDeliveries(pool, { sourceId: source.id, destinationId: destination.id, count, users, prefix: name });
  await sink.reset();
  const start = performance.now();
  await setEnabled(service.url, destination.id, true);
  await sink.waitForCount(count);
  await waitForStatus(pool, destination.id, count);
  return Math.round((count / (performance.now() - start)) * 1000);
}

/**
 * Queues `count` track deliveries in SQL, call g by user g % users, with
 * ordering keys as ingest sets them and ids in call order.
 * @param {import("../../src/db/pool.js").Queryable} pool
 * @param {{ sourceId: string, destinationId: string, count: number, users: number, prefix: string }} options
 * @returns {Promise<void>}
 */
export async function queueUserDeliveries(pool, { sourceId, destinationId, count, users, prefix }) {
  const chunk = 50_000;
  for (let start = 0; start < count; start += chunk) {
    const n = Math.min(chunk, count - start);
    await pool.query(
      `WITH m AS (
         INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
         SELECT $1, $4 || '-' || g, 'track', 'user-' || (g % $6::int), now(),
                '{"version":1,"type":"track","userId":"user-' || (g % $6::int) || '","event":"Order Completed","properties":{"seq":' || g ||
                '},"context":{"ip":"203.0.113.9"},"timestamp":"2026-11-22T10:04:05.123Z","messageId":"' || $4 || '-' || g || '"}'
           FROM generate_series($3::int, $3::int + $5::int - 1) AS g
         RETURNING id, user_id
       )
       INSERT INTO delivery_queue (destination_id, message_pk, source_id, run_at, created_at, ordering_key)
       SELECT $2, m.id, $1, now(), now(), m.user_id FROM m ORDER BY m.id`,
      [sourceId, destinationId, start, prefix, n, users],
    );
  }
  await pool.query("ANALYZE messages; ANALYZE delivery_queue");
}
