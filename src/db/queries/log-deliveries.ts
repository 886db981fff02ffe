import type { Queryable } from "../pool.js";
import { heldByBatchSql, unreadByCursorSql } from "../call-log/log-read.js";
import type { AttemptRow } from "./deliveries.js";
import type { SearchRow } from "./delivery-rows.js";
import type { DeliveryStatus } from "../job-table/delivery-completion.js";

/** A call's derived delivery at one destination (message-deliveries.ts's row, for ExplainMessage). */
export interface LogMessageDeliveryRow {
  destination_id: string;
  id: string;
  status: DeliveryStatus;
  attempt_count: number;
}

// A call at a destination on the call log (migration 30) has no delivery
// row: its delivery is derived, as users saw it when each call had a row.
// The call's exception row, if the loader wrote one, is its delivery (an
// ordinary row of the `deliveries` view, read as before); a call_fates row
// is its fate (no delivery); else a log_batches row of its destination and
// source holding it delivered it: the call committed between the batch's
// snapshots (not visible in `seen`, visible in `up_to`) and its position is
// in the batch's range ((from] < (log_xid, id) <= (to]),
// at the batch's finished_at, with the batch's attempts: its
// delivery_batch_attempts row as attempt 1, or the references the batch
// holds when its calls had more (a split, several URLs, earlier tries of a
// page that failed as a whole, migration 32); else, past a cursor, it is
// pending (retrying while the cursor's head batch keeps failing as a
// whole, with that batch's tries as its attempts).
//
// A derived delivery's id is "<message pk>@<destination id>", for example
// "81723@0b9e7c6e-3f1d-4a53-9f51-2d8c5e1a7b40": the pair GetDelivery
// resolves it to. A per-call id is a decimal bigint (the delivery_ids
// sequence), so the two never collide: a derived id always holds "@" and a
// uuid. Both are opaque strings to the API's clients; the CLI passes an id
// as one argument and the console as one path segment, and neither "@" nor
// a uuid's characters need escaping there (nor a leading "-" mistaken for a
// flag). A call is on a destination's log once, so the pair names one
// delivery, and the message's pk is the call's own (stable while it is kept).

export interface LogDeliveryRow extends SearchRow {
  /** A pending call whose cursor's head batch failed as a whole: that failure's error. */
  last_error: string | null;
}

const logIdPattern = /^([1-9]\d{0,17})@([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/** The id of a call's derived delivery at a destination on the log. */
export function logDeliveryId(messagePk: string, destinationId: string): string {
  return `${messagePk}@${destinationId}`;
}

/** The call and destination a derived delivery's id names; undefined for any other text (a per-call id). */
export function parseLogDeliveryId(id: string): { messagePk: string; destinationId: string } | undefined {
  const match = logIdPattern.exec(id);
  return match ? { messagePk: match[1]!, destinationId: match[2]! } : undefined;
}

/**
 * SQL joined after a messages row `m`, for the destination whose id is the
 * SQL expression `dst`: `b`, the batch that delivered the call (the first
 * by end holding it: the primary key's range, then the snapshots), and,
 * when none did, `c`, a cursor that has not read it yet.
 */
export function derivedJoins(dst: string): string {
  return `LEFT JOIN LATERAL (
       SELECT b.finished_at, b.attempted_at, b.batch_attempt_id, b.finished_xid, b.batch_attempts, b.batch_attempt_numbers,
              b.first_attempt_at
         FROM log_batches b
        WHERE b.destination_id = ${dst} AND b.source_id = m.source_id
          AND ${heldByBatchSql("b", "m")}
        ORDER BY b.to_xid, b.to_id LIMIT 1) b ON true
     LEFT JOIN LATERAL (
       SELECT c.failures, c.run_at, c.first_failed_at, c.last_error, c.held_attempts FROM log_cursors c
        WHERE b.finished_at IS NULL AND c.destination_id = ${dst} AND c.source_id = m.source_id
          AND ${unreadByCursorSql("c", "m")}
        ORDER BY c.failures DESC LIMIT 1) c ON true`;
}

/**
 * The predicates that make `m` a derived delivery at `dst` (with
 * derivedJoins): on the log, delivered by a batch or ahead of a cursor, and
 * with neither an exception row nor a fate of its own.
 */
export function derivedPredicates(dst: string): string[] {
  return ["m.log_xid IS NOT NULL", "(b.finished_at IS NOT NULL OR c.run_at IS NOT NULL)", ...noRowOfItsOwn(dst)];
}

/** That call `m` has neither an exception row nor a fate at `dst`: what the log did is its delivery. */
export function noRowOfItsOwn(dst: string): string[] {
  return [
    `NOT EXISTS (SELECT 1 FROM deliveries x WHERE x.destination_id = ${dst} AND x.message_pk = m.id)`,
    `NOT EXISTS (SELECT 1 FROM call_fates f WHERE f.message_pk = m.id AND f.destination_id = ${dst})`,
  ];
}

/** The derived status (with derivedJoins). */
const statusSql = `(CASE WHEN b.finished_at IS NOT NULL THEN 'delivered' WHEN c.failures > 0 THEN 'retrying' ELSE 'pending' END)::delivery_status`;

/** The derived attempt count (with derivedJoins): a delivered call's tries (its last reference's number), else its cursor's. */
const attemptCountSql = `CASE WHEN b.finished_at IS NOT NULL
    THEN coalesce(b.batch_attempt_numbers[cardinality(b.batch_attempt_numbers)], (b.batch_attempt_id IS NOT NULL)::int)
    ELSE c.failures END`;

/**
 * The columns of a derived delivery, those of the `deliveries` view's reads
 * (delivery-search.ts) and `last_error`: created when the call was received
 * (as a per-call row is, at ingest), attempted and finalized with its batch.
 */
export function derivedColumns(dst: string): string {
  return `m.id::text || '@' || ${dst}::text AS id, ${dst} AS destination_id, m.source_id, m.message_id, m.type,
    ${statusSql} AS status, ${attemptCountSql} AS attempt_count, m.received_at AS created_at,
    CASE WHEN b.finished_at IS NOT NULL THEN coalesce(b.first_attempt_at, b.attempted_at) ELSE c.first_failed_at END AS first_attempt_at,
    coalesce(b.finished_at, c.run_at) AS run_at, b.finished_at AS finalized_at, m.payload, m.user_id,
    (SELECT s.sent_body FROM log_sent_bodies s WHERE s.message_pk = m.id AND s.destination_id = ${dst}) AS sent_body,
    m.received_at::text AS cursor_at, b.finished_xid::text AS finished_xid,
    CASE WHEN b.finished_at IS NULL THEN c.last_error END AS last_error`;
}

/** One derived delivery: a call at a destination, whatever the destination's layout now (its batches say what the log did). */
export async function selectLogDelivery(db: Queryable, id: string): Promise<LogDeliveryRow | undefined> {
  const parsed = parseLogDeliveryId(id);
  if (!parsed) return undefined;
  const result = await db.query<LogDeliveryRow>(
    `SELECT ${derivedColumns("$1::uuid")} FROM messages m ${derivedJoins("$1::uuid")}
      WHERE m.id = $2 AND ${derivedPredicates("$1::uuid").join(" AND ")}`,
    [parsed.destinationId, parsed.messagePk],
  );
  return result.rows[0];
}

/**
 * The attempts of derived deliveries (by id), as a delivery per call lists
 * them (by number, URL and the order made): a delivered call's are its
 * batch's references, or its one row as attempt 1; a pending one's, the
 * tries of the page at its cursor's head that failed as a whole and carried
 * it (numbered per call). Each row is found by its key, day partition
 * included (a reference's from the batch's first attempt on). `call_pks`:
 * the calls the row carried (the first 101), for the API to name as their
 * deliveries (selectCallDeliveryIds).
 */
export async function selectLogAttempts(db: Queryable, ids: readonly string[]): Promise<AttemptRow[]> {
  const pairs = ids.map(parseLogDeliveryId).filter((p) => p !== undefined);
  if (pairs.length === 0) return [];
  const result = await db.query<AttemptRow>(
    `SELECT m.id::text || '@' || l.destination_id::text AS delivery_id, r.attempt, a.url, a.attempted_at, a.outcome, a.status_code,
            a.error, a.latency_ms, CASE WHEN a.outcome = 'success' AND s.discarded_values IS NOT NULL THEN s.response_body ELSE a.response_body END
            AS response_body, a.destination_revision, CASE WHEN a.outcome = 'success' THEN s.discarded_values END AS discarded_values, a.subscription,
            a.method, a.request_headers, a.request_body, a.request_body_bytes, a.batch_id, a.calls AS batch_calls,
            NULL::bigint[] AS batch_delivery_ids, a.call_pks[1:101] AS call_pks
       FROM unnest($1::uuid[], $2::bigint[]) AS l(destination_id, message_pk)
       JOIN messages m ON m.id = l.message_pk
       ${derivedJoins("l.destination_id")}
      CROSS JOIN LATERAL (
        SELECT d.row_id, d.attempt, d.position, coalesce(b.first_attempt_at, b.attempted_at) AS since
          FROM unnest(coalesce(b.batch_attempts, ARRAY[b.batch_attempt_id]), coalesce(b.batch_attempt_numbers, ARRAY[1]))
               WITH ORDINALITY AS d(row_id, attempt, position)
         WHERE b.finished_at IS NOT NULL
        UNION ALL
        SELECT (h.held->>'row')::uuid, dense_rank() OVER (ORDER BY (h.held->>'n')::int)::int, h.position, (h.held->>'at')::timestamptz
          FROM jsonb_array_elements(c.held_attempts) WITH ORDINALITY AS h(held, position)
         WHERE b.finished_at IS NULL AND h.held->'pks' ? m.id::text
      ) r
       JOIN delivery_batch_attempts a
         ON a.destination_id = l.destination_id AND a.id = r.row_id AND a.attempted_at >= r.since
       -- The call's own part of its delivering attempt: what a warehouse could not store of it.
       LEFT JOIN log_sent_bodies s ON s.message_pk = m.id AND s.destination_id = l.destination_id
      WHERE ${derivedPredicates("l.destination_id").join(" AND ")}
      ORDER BY delivery_id, r.attempt, a.url_index, r.position`,
    [pairs.map((p) => p.destinationId), pairs.map((p) => p.messagePk)],
  );
  return result.rows;
}

/**
 * The deliveries of calls at destinations (parallel lists), by
 * "<destination id>/<message pk>": the call's own delivery row there if it
 * has one (it failed alone, or was routed per call), else its derived id.
 * What a batch attempt row of the log names its calls by. One join with
 * the pairs: the queue has no index on message_pk, so each destination's
 * queue is read once, not once per call.
 */
export async function selectCallDeliveryIds(
  db: Queryable,
  destinationIds: readonly string[],
  messagePks: readonly string[],
): Promise<Map<string, string>> {
  if (messagePks.length === 0) return new Map();
  const result = await db.query<{ key: string; id: string }>(
    `WITH l AS (SELECT DISTINCT * FROM unnest($1::uuid[], $2::bigint[]) AS l(destination_id, message_pk)),
          own AS (
            SELECT DISTINCT ON (x.destination_id, x.message_pk) x.destination_id, x.message_pk, x.id
              FROM deliveries x JOIN l ON x.destination_id = l.destination_id AND x.message_pk = l.message_pk
             ORDER BY x.destination_id, x.message_pk, x.created_at DESC)
     SELECT l.destination_id::text || '/' || l.message_pk::text AS key,
            coalesce(own.id::text, l.message_pk::text || '@' || l.destination_id::text) AS id
       FROM l LEFT JOIN own ON own.destination_id = l.destination_id AND own.message_pk = l.message_pk`,
    [destinationIds, messagePks],
  );
  return new Map(result.rows.map((r) => [r.key, r.id]));
}

/** A stored call's derived deliveries, one per destination on the log that has one for it (ExplainMessage). */
export async function selectLogMessageDeliveries(db: Queryable, messagePk: string): Promise<LogMessageDeliveryRow[]> {
  const result = await db.query<LogMessageDeliveryRow>(
    `SELECT m.id::text || '@' || dst.id::text AS id, dst.id AS destination_id, ${statusSql} AS status, ${attemptCountSql} AS attempt_count
       FROM destinations dst JOIN messages m ON m.id = $1 ${derivedJoins("dst.id")}
      WHERE dst.delivery_layout = 'log' AND ${derivedPredicates("dst.id").join(" AND ")}`,
    [messagePk],
  );
  return result.rows;
}

/** The destinations on the log (few: the batching kinds'), whose reads add derived deliveries. */
export async function selectLogDestinationIds(db: Queryable): Promise<string[]> {
  const result = await db.query<{ id: string }>("SELECT id FROM destinations WHERE delivery_layout = 'log'");
  return result.rows.map((r) => r.id);
}
