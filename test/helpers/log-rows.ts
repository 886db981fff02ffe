import { randomUUID } from "node:crypto";
import type { Queryable } from "../../src/db/pool.js";

// The rows the call log's loader writes (docs/job-table.md, "The call
// log"), written here with plain SQL: the reads derive a destination's
// deliveries from them, whatever wrote them.

/** A stored call's place on the log. */
export interface LogCall {
  pk: string;
  messageId: string;
  xid: string;
}

/**
 * Puts a destination on the log as the process does, and removes what the
 * per-call ingest wrote for it (a destination on the log gets no queue row
 * and no fate at ingest: the loader routes its calls).
 */
export async function putOnLog(db: Queryable, destinationId: string): Promise<void> {
  await db.query("UPDATE destinations SET delivery_layout = 'log', log_since = now() WHERE id = $1", [destinationId]);
  await db.query("DELETE FROM delivery_queue WHERE destination_id = $1", [destinationId]);
  await db.query("DELETE FROM call_fates WHERE destination_id = $1", [destinationId]);
}

/** A source's calls in log order (position (log_xid, id)). */
export async function callsOnLog(db: Queryable, sourceId: string): Promise<LogCall[]> {
  const result = await db.query<LogCall>(
    `SELECT id::text AS pk, message_id AS "messageId", log_xid::text AS xid FROM messages
      WHERE source_id = $1 AND log_xid IS NOT NULL ORDER BY log_xid, id`,
    [sourceId],
  );
  return result.rows;
}

/** The position before every call (a cursor's start). */
export const start = { xid: "1", pk: "0" };

export async function writeCursor(
  db: Queryable,
  row: { destinationId: string; sourceId: string; after: { xid: string; pk: string }; failures?: number; lastError?: string; runAt?: Date },
): Promise<void> {
  await db.query(
    // Read: every call of a transaction before the position's, and those of its own up to its row (a burst bounded by now).
    `INSERT INTO log_cursors (destination_id, source_id, seen, up_to, after_xid, after_id, failures, first_failed_at, last_error, run_at)
     VALUES ($1, $2, format('%s:%s:', $3::text, $3::text)::pg_snapshot, pg_current_snapshot(), $3::xid8, $4, $5,
             CASE WHEN $5 > 0 THEN now() END, $6, coalesce($7, now()))
     ON CONFLICT (destination_id, source_id, lane) DO UPDATE
       SET seen = EXCLUDED.seen, up_to = EXCLUDED.up_to, after_xid = EXCLUDED.after_xid, after_id = EXCLUDED.after_id, failures = EXCLUDED.failures,
           first_failed_at = EXCLUDED.first_failed_at, last_error = EXCLUDED.last_error, run_at = EXCLUDED.run_at`,
    [row.destinationId, row.sourceId, row.after.xid, row.after.pk, row.failures ?? 0, row.lastError ?? null, row.runAt ?? null],
  );
}

export interface BatchAttempt {
  id: string;
  batchId: string;
  attemptedAt: Date;
}

/** A batch operation's result row (delivery_batch_attempts), as the completion writes it. */
export async function writeBatchAttempt(
  db: Queryable,
  row: { destinationId: string; attemptedAt: Date; outcome: "success" | "permanent"; calls: number; deliveries: number; error?: string },
): Promise<BatchAttempt> {
  const attempt = { id: randomUUID(), batchId: randomUUID(), attemptedAt: row.attemptedAt };
  await db.query(
    `INSERT INTO delivery_batch_attempts (destination_id, id, batch_id, url_index, url, attempted_at, outcome, status_code, error,
                                          latency_ms, calls, deliveries)
     VALUES ($1, $2, $3, 0, 'https://warehouse.example/load', $4, $5, $6, $7, 120, $8, $9)`,
    [
      row.destinationId,
      attempt.id,
      attempt.batchId,
      row.attemptedAt,
      row.outcome,
      row.outcome === "success" ? 200 : 400,
      row.error ?? null,
      row.calls,
      row.deliveries,
    ],
  );
  return attempt;
}

/** A delivered batch of the range (from, to]: its attempt row and its log_batches row, in one transaction as the loader's. */
export async function writeBatch(
  db: Queryable,
  row: {
    destinationId: string;
    sourceId: string;
    from: { xid: string; pk: string };
    to: { xid: string; pk: string };
    calls: number;
    delivered: number;
    finishedAt: Date;
  },
): Promise<BatchAttempt> {
  const attemptedAt = new Date(row.finishedAt.getTime() - 500);
  const attempt = await writeBatchAttempt(db, {
    destinationId: row.destinationId,
    attemptedAt,
    outcome: "success",
    calls: row.delivered,
    deliveries: row.delivered,
  });
  await db.query(
    // Between a snapshot before the range's first transaction and now, as a loader's burst.
    `INSERT INTO log_batches (destination_id, source_id, lane, seen, up_to, from_xid, from_id, to_xid, to_id, calls, delivered,
                              batch_attempt_id, attempted_at, finished_at)
     VALUES ($1, $2, 'live', format('%s:%s:', $3::text, $3::text)::pg_snapshot, pg_current_snapshot(),
             $3::xid8, $4, $5::xid8, $6, $7, $8, $9, $10, $11)`,
    [
      row.destinationId,
      row.sourceId,
      row.from.xid,
      row.from.pk,
      row.to.xid,
      row.to.pk,
      row.calls,
      row.delivered,
      attempt.id,
      attemptedAt,
      row.finishedAt,
    ],
  );
  return attempt;
}

/** A call routing held back from a destination on the log. */
export async function writeFate(db: Queryable, destinationId: string, messagePk: string, reason: string): Promise<void> {
  await db.query("INSERT INTO call_fates (message_pk, destination_id, fate, reason, recorded_at) VALUES ($1, $2, 'filtered', $3, now())", [
    messagePk,
    destinationId,
    reason,
  ]);
}

/** A call that failed alone in a batch, for good: its exception row (delivery_history), referencing the failure's attempt row. */
export async function writeFailedException(
  db: Queryable,
  row: { destinationId: string; sourceId: string; messagePk: string; attempt: BatchAttempt; finishedAt: Date },
): Promise<string> {
  const result = await db.query<{ id: string }>(
    `INSERT INTO delivery_history (destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count,
                                   lease_token, first_attempt_at, batch_attempts, batch_attempt_numbers)
     SELECT $1, nextval('delivery_ids'), m.id, $2, 'failed', m.received_at, $4, 1, 0, $5, ARRAY[$6::uuid], ARRAY[1]
       FROM messages m WHERE m.id = $3
     RETURNING id::text`,
    [row.destinationId, row.sourceId, row.messagePk, row.finishedAt, row.attempt.attemptedAt, row.attempt.id],
  );
  return result.rows[0]!.id;
}
