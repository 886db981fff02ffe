// @ts-check
/**
 * The stored calls of `queueDeliveries` and `storeCalls`: `$4` of them from
 * number `$2`, ids `$3-n`, into source `$1`; with `traceAt`, parameter
 * number `traceAt` is every call's traceparent.
 * @param {number} [traceAt]
 */
const insertMessages = (traceAt) => `
  INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload${traceAt ? ", traceparent" : ""})
  SELECT $1, $3 || '-' || g, 'track', 'user-' || g, now(),
         '{"version":1,"type":"track","userId":"user-' || g || '","event":"Order Completed","properties":{"orderId":"' || g ||
         '","total":42.5,"currency":"EUR"},"context":{"ip":"203.0.113.9"},"timestamp":"2026-11-22T10:04:05.123Z","messageId":"' || $3 || '-' || g || '"}'
         ${traceAt ? `, $${traceAt}::text` : ""}
    FROM generate_series($2::int, $2::int + $4::int - 1) AS g`;

/**
 * Runs `statement` once per chunk of 50,000 of `count` calls: parameters as `insertMessages`'s, then `extra`.
 * @param {import("../../src/db/pool.js").Queryable} pool
 * @param {{ sourceId: string, count: number, prefix: string, extra?: unknown[] }} options
 * @param {string} statement
 */
async function inChunks(pool, { sourceId, count, prefix, extra = [] }, statement) {
  const chunk = 50_000;
  for (let start = 0; start < count; start += chunk) {
    await pool.query(statement, [sourceId, start, prefix, Math.min(chunk, count - start), ...extra]);
  }
}

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
  // Without a traceparent the column is not named: a build from before it was added runs this too.
  const statement = `
    WITH m AS (${insertMessages(traceparent ? 6 : undefined)} RETURNING id)
    INSERT INTO delivery_queue (destination_id, message_pk, source_id, run_at, created_at)
    SELECT $5, m.id, $1, now(), now() FROM m`;
  await inChunks(pool, { sourceId, count, prefix, extra: traceparent ? [destinationId, traceparent] : [destinationId] }, statement);
  await pool.query("ANALYZE messages; ANALYZE delivery_queue");
}

/**
 * Stores `count` track calls of a source in SQL and nothing else, as ingest
 * stores them for destinations on the call log (no queue row, no fate): each
 * chunk's calls get the position of its transaction (`messages.log_xid`,
 * the column's default), so a cursor behind them reads them in order.
 * Message ids are `${prefix}-${n}`, n from 0. `analyze: false` leaves out
 * the ANALYZE after them (in a transaction left open, it would hold back
 * every other ANALYZE of the table).
 * @param {import("../../src/db/pool.js").Queryable} pool
 * @param {{ sourceId: string, count: number, prefix?: string, analyze?: boolean }} options
 */
export async function storeCalls(pool, { sourceId, count, prefix = "s", analyze = true }) {
  await inChunks(pool, { sourceId, count, prefix }, insertMessages());
  if (analyze) await pool.query("ANALYZE messages");
}

/**
 * A bare cursor loader's cursor: the live cursor of (destination, source) before every call of the source stored
 * after it is made (at the oldest position still running), as the service makes a destination's cursor on the log.
 * @param {import("../../src/db/pool.js").Queryable} pool
 * @param {{ destinationId: string, sourceId: string }} options
 */
export async function addBareLogCursor(pool, { destinationId, sourceId }) {
  await pool.query(
    `INSERT INTO log_cursors (destination_id, source_id, lane, seen, after_xid, after_id)
     VALUES ($1, $2, 'live', pg_current_snapshot(), pg_snapshot_xmin(pg_current_snapshot()), 0)`,
    [destinationId, sourceId],
  );
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
 * job table's rows need a destination; the bare scripts send wherever they were told). `layout`
 * 'log': a bare cursor loader's (bench/bare-log-loader.mjs), beside its cursor (`addBareLogCursor`).
 * @param {import("../../src/db/pool.js").Queryable} pool
 * @param {{ id: string, name: string, url?: string, enabled?: boolean, layout?: "per_call" | "log" }} options
 */
export async function addBareDestination(pool, { id, name, url = "http://127.0.0.1:9/unused", enabled = false, layout }) {
  // Without a layout the column is not named: a build from before the call log runs this too.
  await pool.query(
    `INSERT INTO destinations (id, name, enabled, webhooks${layout ? ", delivery_layout" : ""})
     VALUES ($1, $2, $3, $4${layout ? ", $5" : ""}) ON CONFLICT (id) DO NOTHING`,
    [id, name, enabled, JSON.stringify([{ url, headers: {} }]), ...(layout ? [layout] : [])],
  );
}
