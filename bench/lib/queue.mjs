// @ts-check
/**
 * Queues `count` track deliveries for one destination directly in SQL, with
 * bodies shaped as Waypost stores them, so a burn-down starts from a full
 * queue without timing the ingest (no ordering key: the deliveries are not
 * ordered per user). Message ids are `${prefix}-${n}`, n from 0. With a
 * `traceparent`, every message carries it as a stored trace context.
 * test/bench/queue.test.ts checks that the service's claim takes these rows,
 * so a schema change that breaks this statement fails `npm test`.
 * @param {import("../../src/db/pool.js").Queryable} pool
 * @param {{ sourceId: string, destinationId: string, count: number, prefix?: string, traceparent?: string }} options
 * @returns {Promise<void>}
 */
export async function queueDeliveries(pool, { sourceId, destinationId, count, prefix = "q", traceparent }) {
  const chunk = 50_000;
  for (let start = 0; start < count; start += chunk) {
    const n = Math.min(chunk, count - start);
    await pool.query(
      `WITH m AS (
         INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload${traceparent ? ", traceparent" : ""})
         SELECT $1, $4 || '-' || g, 'track', 'user-' || g, now(),
                '{"version":1,"type":"track","userId":"user-' || g || '","event":"Order Completed","properties":{"orderId":"' || g ||
                '","total":42.5,"currency":"EUR"},"context":{"ip":"203.0.113.9"},"timestamp":"2026-11-22T10:04:05.123Z","messageId":"' || $4 || '-' || g || '"}'
                ${traceparent ? ", $6::text" : ""}
           FROM generate_series($3::int, $3::int + $5::int - 1) AS g
         RETURNING id
       )
       INSERT INTO delivery_queue (destination_id, message_pk, source_id, run_at, created_at)
       SELECT $2, m.id, $1, now(), now() FROM m`,
      // Without a traceparent the column is not named: a build from before it was added runs this too.
      traceparent ? [sourceId, destinationId, start, prefix, n, traceparent] : [sourceId, destinationId, start, prefix, n],
    );
  }
  await pool.query("ANALYZE messages; ANALYZE delivery_queue");
}

/**
 * The same body and signature a job-queue baseline would send.
 * @param {number} i
 */
export function benchBody(i) {
  return `{"version":1,"type":"track","userId":"user-${i}","event":"Order Completed","properties":{"orderId":"${i}","total":42.5,"currency":"EUR"},"context":{"ip":"203.0.113.9"},"timestamp":"2026-11-22T10:04:05.123Z","messageId":"b-${i}"}`;
}

/**
 * A destination row written in SQL for a bare baseline's deliveries (a webhook destination, as the
 * job table's rows need a destination; the bare scripts send wherever they were told).
 * @param {import("../../src/db/pool.js").Queryable} pool
 * @param {{ id: string, name: string, url?: string, enabled?: boolean }} options
 */
export async function addBareDestination(pool, { id, name, url = "http://127.0.0.1:9/unused", enabled = false }) {
  await pool.query("INSERT INTO destinations (id, name, enabled, webhooks) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING", [
    id,
    name,
    enabled,
    JSON.stringify([{ url, headers: {} }]),
  ]);
}
