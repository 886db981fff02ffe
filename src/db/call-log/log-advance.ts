import { type DeliveryStatus, type HeldBackReason, logExceptionCtes } from "../job-table/index.js";
import type { Queryable } from "../pool.js";
import { type HeldAttempt, type LogCursor, windowFenceSql, windowFenceValues } from "./log-cursors.js";
import type { LogPosition, LogWindow } from "./log-read.js";

/** A delivery_batch_attempts row: one operation's result, shared by the calls it decided. */
export interface LogAttemptRow {
  id: string;
  batchId: string;
  urlIndex: number;
  url: string;
  attemptedAt: Date;
  outcome: string;
  statusCode: number | null;
  error: string | null;
  latencyMs: number;
  responseBody: string | null;
  destinationRevision: number | null;
  calls: number;
  /** The calls it decided: delivered ones, or the exceptions that reference it. */
  deliveries: number;
  /** Those calls' messages' ids (readers name each by its delivery: the batch's other calls). */
  pks: string[];
  /** Values of its calls a warehouse could not store (the destination's stats count them). */
  discardedValues: number;
}

/**
 * A call's batch attempt rows, each with its try's number, in the order
 * made: as a delivery's references (batch_attempts, batch_attempt_numbers).
 */
export interface CallAttempts {
  rows: string[];
  numbers: number[];
  /** When the first was made (null: none yet). */
  firstAt: Date | null;
  /** Tries made: the last number (0: none). */
  tries: number;
}

/**
 * What a call's own attempt kept beyond its batch's row (log_sent_bodies):
 * the body it was sent as, when the destination's rules changed it; and
 * what a warehouse could not store of it (the count and the note saying
 * which values, as a per-call delivery's attempt shows them).
 */
export interface LogSentBody {
  messagePk: string;
  body: string | null;
  discardedValues?: number | undefined;
  note?: string | null | undefined;
}

/** A call that routing held back here: a fate row, as ingest writes for a destination per call. */
export interface LogFate {
  messagePk: string;
  fate: "filtered" | "integrations_off";
  reason: HeldBackReason | "transform" | null;
}

/** A call that failed alone: it gets a delivery row, retried (or shown failed) per call from now on. */
export interface LogException {
  messagePk: string;
  /** pending: not sent, held behind its user's earlier exception (per-user ordering). */
  status: Exclude<DeliveryStatus, "delivered" | "cancelled">;
  /** Its next try (retrying), or when it finished. */
  runAt: Date;
  attemptCount: number;
  firstAttemptAt: Date | null;
  error: string | null;
  retryUrls: string[] | null;
  orderingKey: string | null;
  /** When the call was received: the delivery's creation, as ingest creates a per-call one. */
  createdAt: Date;
  /** Its attempts (rows of this page or of its earlier tries), numbered. */
  attempts: CallAttempts | null;
}

/**
 * A run of the page's positions whose delivered calls share one attempt
 * row (one POST, one warehouse transaction, one publish round): a
 * log_batches row. The runs of a page cover it without gaps, in order.
 */
export interface LogBatchRange {
  from: LogPosition;
  to: LogPosition;
  calls: number;
  delivered: number;
  /** The delivered calls' attempt row (null: none was delivered in the run). */
  row: LogAttemptRow | null;
  /** The delivered calls' attempts, when more than `row` alone as attempt 1 (a split, earlier tries, several URLs). */
  attempts: CallAttempts | null;
}

export interface LogAdvance {
  cursor: LogCursor;
  token: string;
  /** The burst's bound the page was read under (its batches' `up_to`). */
  upTo: string;
  /** Where the cursor moves: past the page (log-read.ts nextWindow). */
  next: LogWindow;
  batches: LogBatchRange[];
  rows: LogAttemptRow[];
  fates: LogFate[];
  exceptions: LogException[];
  sentBodies: LogSentBody[];
  /** The cursor's held attempts that stay (those of calls after the page; null: none). */
  held: HeldAttempt[] | null;
  now: Date;
}

/** The INSERT of a page's delivery_batch_attempts rows, from the JSON parameter `rows` (attemptRowsJson), for `destination`. */
function insertAttemptRowsSql(destination: string, rows: string): string {
  return `INSERT INTO delivery_batch_attempts (destination_id, id, batch_id, url_index, url, attempted_at, outcome, status_code, error,
                                         latency_ms, response_body, destination_revision, calls, deliveries, call_pks, discarded_values)
    SELECT ${destination}, r.id, r.batch_id, r.url_index, r.url, r.attempted_at, r.outcome::attempt_outcome, r.status_code, r.error,
           r.latency_ms, r.response_body, r.destination_revision, r.calls, r.deliveries, r.call_pks, r.discarded_values
      FROM json_to_recordset(${rows}::json) AS r(id uuid, batch_id uuid, url_index int, url text, attempted_at timestamptz, outcome text,
                                             status_code int, error text, latency_ms int, response_body text, destination_revision int,
                                             calls int, deliveries int, call_pks bigint[], discarded_values int)`;
}

/** The upsert of sent bodies (the JSON parameter `bodies`: sentBodiesJson) for `destination`: a call's last body sent. */
function upsertSentBodiesSql(destination: string, bodies: string, where = ""): string {
  return `INSERT INTO log_sent_bodies (message_pk, destination_id, sent_body, discarded_values, response_body)
    SELECT s.message_pk, ${destination}, s.body, s.discarded, s.note
      FROM json_to_recordset(${bodies}::json) AS s(message_pk bigint, body text, discarded int, note text) ${where}
    ON CONFLICT (message_pk, destination_id) DO UPDATE
      SET sent_body = excluded.sent_body, discarded_values = excluded.discarded_values, response_body = excluded.response_body`;
}

function sentBodiesJson(bodies: readonly LogSentBody[]): string {
  return JSON.stringify(
    bodies.map((b) => ({ message_pk: b.messagePk, body: b.body, discarded: b.discardedValues || null, note: b.note ?? null })),
  );
}

// One statement: the cursor moves under its lease's fence from where the
// loader read it, and only then (every other part reads `moved`) the batch,
// its attempt rows, the fates and the exceptions are written. A loader whose
// lease was taken over moves nothing and writes nothing: its successor
// reads the same calls again and sends the same batch.
const advanceStatement = `
  WITH moved AS (
    UPDATE log_cursors SET seen = $5::pg_snapshot, up_to = $6::pg_snapshot, after_xid = $14::xid8, after_id = $15::bigint,
                           failures = 0, first_failed_at = NULL, last_error = NULL, run_at = $7, held_attempts = $19::jsonb
     WHERE destination_id = $1 AND source_id = $2 AND lane = $3 AND holder = $4 AND ${windowFenceSql(8)}
    RETURNING 1
  ), attempt_rows AS (
    ${insertAttemptRowsSql("$1", "$18")}
     WHERE EXISTS (SELECT 1 FROM moved)
     ORDER BY r.id
    ON CONFLICT (destination_id, id, attempted_at) DO UPDATE
      SET deliveries = delivery_batch_attempts.deliveries + excluded.deliveries,
          call_pks = delivery_batch_attempts.call_pks || excluded.call_pks
    RETURNING 1
  ), batch AS (
    INSERT INTO log_batches (destination_id, source_id, lane, seen, up_to, from_xid, from_id, to_xid, to_id, calls, delivered,
                             batch_attempt_id, attempted_at, finished_at, batch_attempts, batch_attempt_numbers, first_attempt_at)
    SELECT $1, $2, $3, $8::pg_snapshot, $16::pg_snapshot, b.from_xid, b.from_id, b.to_xid, b.to_id, b.calls, b.delivered, b.row_id,
           b.attempted_at, $7, b.attempt_rows, b.attempt_numbers, b.first_attempt_at
      FROM json_to_recordset($12::json) AS b(from_xid xid8, from_id bigint, to_xid xid8, to_id bigint, calls int, delivered int,
                                            row_id uuid, attempted_at timestamptz, attempt_rows uuid[], attempt_numbers int[],
                                            first_attempt_at timestamptz)
     WHERE EXISTS (SELECT 1 FROM moved)
    RETURNING 1
  ), bodies AS (
    ${upsertSentBodiesSql("$1", "$20", "WHERE EXISTS (SELECT 1 FROM moved)")}
    RETURNING 1
  ), fates AS (
    INSERT INTO call_fates (message_pk, destination_id, fate, reason, recorded_at)
    SELECT f.message_pk, $1, f.fate, f.reason, $7
      FROM json_to_recordset($13::json) AS f(message_pk bigint, fate text, reason text)
     WHERE EXISTS (SELECT 1 FROM moved)
    ON CONFLICT DO NOTHING
    RETURNING 1
  ), exceptions AS (
    SELECT e.* FROM json_to_recordset($17::json) AS e(message_pk bigint, status delivery_status, run_at timestamptz,
                                                      attempt_count int, first_attempt_at timestamptz,
                                                      error text, retry_urls text[], ordering_key text, created_at timestamptz,
                                                      attempt_rows uuid[], attempt_numbers int[])
     WHERE EXISTS (SELECT 1 FROM moved)
  ), ${logExceptionCtes("exceptions", "$1", "$2")}
  -- The other CTEs write whether read here or not (Postgres runs every data-modifying CTE once).
  SELECT EXISTS (SELECT 1 FROM moved) AS moved, EXISTS (SELECT 1 FROM queued) AS queued`;

function attemptRowsJson(rows: readonly LogAttemptRow[]): string {
  return JSON.stringify(
    rows.map((r) => ({
      id: r.id,
      batch_id: r.batchId,
      url_index: r.urlIndex,
      url: r.url,
      attempted_at: r.attemptedAt.toISOString(),
      outcome: r.outcome,
      status_code: r.statusCode,
      error: r.error,
      latency_ms: Math.round(r.latencyMs),
      response_body: r.responseBody,
      destination_revision: r.destinationRevision,
      calls: r.calls,
      deliveries: r.deliveries,
      call_pks: r.pks,
      discarded_values: r.discardedValues || null,
    })),
  );
}

function batchesJson(batches: readonly LogBatchRange[]): string {
  return JSON.stringify(
    batches.map((b) => ({
      from_xid: b.from.xid,
      from_id: b.from.id,
      to_xid: b.to.xid,
      to_id: b.to.id,
      calls: b.calls,
      delivered: b.delivered,
      row_id: b.row?.id ?? null,
      attempted_at: b.row?.attemptedAt.toISOString() ?? null,
      attempt_rows: b.attempts?.rows ?? null,
      attempt_numbers: b.attempts?.numbers ?? null,
      first_attempt_at: b.attempts?.firstAt?.toISOString() ?? null,
    })),
  );
}

function exceptionsJson(exceptions: readonly LogException[]): string {
  return JSON.stringify(
    exceptions.map((e) => ({
      message_pk: e.messagePk,
      status: e.status,
      run_at: e.runAt.toISOString(),
      attempt_count: e.attemptCount,
      first_attempt_at: e.firstAttemptAt?.toISOString() ?? null,
      error: e.error,
      retry_urls: e.retryUrls,
      ordering_key: e.orderingKey,
      created_at: e.createdAt.toISOString(),
      attempt_rows: e.attempts?.rows ?? null,
      attempt_numbers: e.attempts?.numbers ?? null,
    })),
  );
}

/**
 * Records a delivered batch and moves the cursor past it, in one statement.
 * Returns whether it moved (false: the lease was lost, nothing was written)
 * and whether any exception was queued (the caller wakes the per-call loop).
 */
export async function advanceLogCursor(db: Queryable, advance: LogAdvance): Promise<{ moved: boolean; queued: boolean }> {
  const { cursor } = advance;
  const result = await db.query<{ moved: boolean; queued: boolean }>({
    name: "waypost-advance-log-cursor",
    text: advanceStatement,
    values: [
      cursor.destinationId,
      cursor.sourceId,
      cursor.lane,
      advance.token,
      advance.next.seen,
      advance.next.upTo,
      advance.now,
      ...windowFenceValues(cursor),
      batchesJson(advance.batches),
      JSON.stringify(advance.fates.map((f) => ({ message_pk: f.messagePk, fate: f.fate, reason: f.reason }))),
      advance.next.after.xid,
      advance.next.after.id,
      advance.upTo,
      exceptionsJson(advance.exceptions),
      attemptRowsJson(advance.rows),
      advance.held && advance.held.length > 0 ? JSON.stringify(advance.held) : null,
      sentBodiesJson(advance.sentBodies),
    ],
  });
  const row = result.rows[0]!;
  return { moved: row.moved, queued: row.queued };
}

/**
 * A batch that failed as a whole keeps its attempt rows (stats, its calls'
 * attempts, the cursor's last error) though the cursor stays; and what its
 * calls were sent as, when the rules changed them (they show as retrying).
 */
export async function recordHeldBatch(
  db: Queryable,
  destinationId: string,
  rows: readonly LogAttemptRow[],
  sentBodies: readonly LogSentBody[],
): Promise<void> {
  if (rows.length > 0) {
    await db.query({
      text: `${insertAttemptRowsSql("$1", "$2")}
             ON CONFLICT DO NOTHING`,
      values: [destinationId, attemptRowsJson(rows)],
    });
  }
  if (sentBodies.length > 0) {
    await db.query({
      text: upsertSentBodiesSql("$1", "$2"),
      values: [destinationId, sentBodiesJson(sentBodies)],
    });
  }
}
