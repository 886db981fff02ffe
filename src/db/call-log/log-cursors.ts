import { heldDestinationsSql } from "../job-table/index.js";
import { batchingKindSql } from "./log-destinations.js";
import type { Queryable } from "../pool.js";
import { hasCallsPastSql, type LogWindow } from "./log-read.js";

/** A cursor as its loader holds it. */
export interface LogCursor {
  destinationId: string;
  sourceId: string;
  /** 'live', or 'backfill:<job id>'. */
  lane: string;
  window: LogWindow;
  /** Consecutive failures of the batch at its head (0: none), and since when. */
  failures: number;
  firstFailedAt: Date | null;
  /** When the destination moved onto the log (null: on it from the start). */
  logSince: Date | null;
  /** The operations of the head page's tries that failed as a whole, in the order made (none: []). */
  held: HeldAttempt[];
}

/**
 * An operation of a try of the cursor's head page that failed as a whole
 * (log_cursors.held_attempts): the page's calls list it among their
 * attempts, before the try that records them. `n` orders the tries (each
 * call numbers its own: a call may have missed one).
 */
export interface HeldAttempt {
  /** Its delivery_batch_attempts row, and that row's attempted_at (ISO). */
  row: string;
  at: string;
  n: number;
  /** The calls it carried (their messages' ids). */
  pks: string[];
}

interface CursorRow {
  destination_id: string;
  source_id: string;
  lane: string;
  seen: string;
  up_to: string | null;
  after_xid: string;
  after_id: string;
  failures: number;
  first_failed_at: Date | null;
  log_since: Date | null;
  held_attempts: HeldAttempt[] | null;
}

function cursorOfRow(row: CursorRow): LogCursor {
  return {
    destinationId: row.destination_id,
    sourceId: row.source_id,
    lane: row.lane,
    window: { seen: row.seen, upTo: row.up_to, after: { xid: row.after_xid, id: row.after_id } },
    failures: row.failures,
    firstFailedAt: row.first_failed_at,
    logSince: row.log_since,
    held: row.held_attempts ?? [],
  };
}

/** The key a cursor is worked under (one at a time per process, and `prefer` names one). */
export function cursorKey(cursor: Pick<LogCursor, "destinationId" | "sourceId" | "lane">): string {
  return `${cursor.destinationId}/${cursor.sourceId}/${cursor.lane}`;
}

const cursorColumns = `c.destination_id, c.source_id, c.lane, c.seen::text AS seen, c.up_to::text AS up_to,
  c.after_xid::text AS after_xid, c.after_id::text AS after_id, c.failures, c.first_failed_at, c.held_attempts`;

/** The window fence: the cursor is where its holder read it from. */
export const windowFenceSql = (first: number) =>
  `seen::text = $${first} AND up_to::text IS NOT DISTINCT FROM $${first + 1} AND after_xid = $${first + 2}::xid8 AND after_id = $${first + 3}::bigint`;

/** The window fence's parameters, in order. */
export function windowFenceValues(cursor: LogCursor): unknown[] {
  const { window } = cursor;
  return [window.seen, window.upTo, window.after.xid, window.after.id];
}

// A cursor is taken when nobody holds it, it is due, its destination is
// enabled, on the log and not held back by endpoint health (a back-off or an
// open circuit), and there is something past it to read. SKIP LOCKED: two
// processes claiming at once take different cursors.
const claimStatement = `
  WITH chosen AS (
    SELECT c.destination_id, c.source_id, c.lane FROM log_cursors c
      JOIN destinations d ON d.id = c.destination_id AND d.enabled AND d.delivery_layout = 'log'
     WHERE c.run_at <= $2 AND (c.held_until IS NULL OR c.held_until <= $2)
       AND (c.destination_id || '/' || c.source_id || '/' || c.lane) <> ALL($5::text[])
       AND c.destination_id NOT IN (${heldDestinationsSql("$2")})
       AND ${hasCallsPastSql("c")}
     ORDER BY (c.destination_id || '/' || c.source_id || '/' || c.lane) = $4 DESC, c.run_at
     LIMIT 1
     FOR UPDATE OF c SKIP LOCKED
  )
  UPDATE log_cursors c SET holder = $1, held_until = $2::timestamptz + make_interval(secs => $3::double precision / 1000)
    FROM chosen, destinations d
   WHERE (c.destination_id, c.source_id, c.lane) = (chosen.destination_id, chosen.source_id, chosen.lane) AND d.id = c.destination_id
  RETURNING ${cursorColumns}, d.log_since`;

/**
 * Leases one cursor with calls to deliver under `token`, `prefer` (a
 * cursorKey) first when it is free, none of `skip` (cursorKeys waiting here
 * for their batch to fill).
 */
export async function claimLogCursor(
  db: Queryable,
  token: string,
  now: Date,
  leaseMs: number,
  prefer?: string,
  skip: readonly string[] = [],
): Promise<LogCursor | undefined> {
  const result = await db.query<CursorRow>({ text: claimStatement, values: [token, now, leaseMs, prefer ?? "", skip] });
  const row = result.rows[0];
  return row ? cursorOfRow(row) : undefined;
}

const fence = "destination_id = $1 AND source_id = $2 AND lane = $3 AND holder = $4";

/** The heartbeat: false when the cursor is no longer held under `token`. */
export async function extendLogCursor(db: Queryable, cursor: LogCursor, token: string, now: Date, leaseMs: number): Promise<boolean> {
  const result = await db.query({
    text: `UPDATE log_cursors SET held_until = $5::timestamptz + make_interval(secs => $6::double precision / 1000) WHERE ${fence}`,
    values: [cursor.destinationId, cursor.sourceId, cursor.lane, token, now, leaseMs],
  });
  return result.rowCount === 1;
}

/** Gives the cursor up; a no-op when it is no longer held under `token`. */
export async function releaseLogCursor(db: Queryable, cursor: LogCursor, token: string): Promise<void> {
  await db.query({
    text: `UPDATE log_cursors SET holder = NULL, held_until = NULL WHERE ${fence}`,
    values: [cursor.destinationId, cursor.sourceId, cursor.lane, token],
  });
}

/**
 * A burst read to its end on a page boundary (its last page was full, the
 * read after it empty): the cursor moves to the burst's end, nothing else
 * to record. False when it is no longer held under `token` or was moved.
 */
export async function endLogBurst(db: Queryable, cursor: LogCursor, token: string, next: LogWindow, now: Date): Promise<boolean> {
  const result = await db.query({
    text: `UPDATE log_cursors SET seen = $9::pg_snapshot, up_to = NULL, after_xid = '0', after_id = 0, run_at = $10
            WHERE ${fence} AND ${windowFenceSql(5)}`,
    values: [cursor.destinationId, cursor.sourceId, cursor.lane, token, ...windowFenceValues(cursor), next.seen, now],
  });
  return result.rowCount === 1;
}

/**
 * A batch that failed as a whole: the cursor stays where it is and is due
 * again at `runAt` (the retry schedule), counting the failure and keeping
 * the try's operations (`held`) for its calls' attempts. False when the
 * cursor is no longer held under `token`.
 */
export async function holdLogCursor(
  db: Queryable,
  cursor: LogCursor,
  token: string,
  failure: { at: Date; runAt: Date; error: string; held: readonly HeldAttempt[] },
): Promise<boolean> {
  const result = await db.query({
    text: `UPDATE log_cursors SET failures = failures + 1, first_failed_at = coalesce(first_failed_at, $5), last_error = $6, run_at = $7,
                                  held_attempts = coalesce(held_attempts, '[]') || $12::jsonb
            WHERE ${fence} AND ${windowFenceSql(8)}`,
    values: [
      cursor.destinationId,
      cursor.sourceId,
      cursor.lane,
      token,
      failure.at,
      failure.error,
      failure.runAt,
      ...windowFenceValues(cursor),
      JSON.stringify(failure.held),
    ],
  });
  return result.rowCount === 1;
}

/**
 * Gives every destination on the log a live cursor for each source
 * connected to it (starting where the later of the connection and the move
 * onto the log was made: no call stored after either is missed),
 * and drops the cursors of sources no longer connected and of destinations
 * gone. Run at start, and whenever a destination or a connection changes
 * (cheap: two statements over the connections).
 */
export async function syncLogCursors(db: Queryable): Promise<void> {
  await db.query(`
    INSERT INTO log_cursors (destination_id, source_id, lane, seen)
    SELECT ds.destination_id, ds.source_id, 'live', ${everythingUpToSql("greatest(ds.log_from, d.log_from)")}
      FROM destination_sources ds JOIN destinations d ON d.id = ds.destination_id AND d.delivery_layout = 'log'
    ON CONFLICT DO NOTHING`);
  await db.query(`
    DELETE FROM log_cursors c
     WHERE c.lane = 'live' AND NOT EXISTS (
       SELECT 1 FROM destination_sources ds JOIN destinations d ON d.id = ds.destination_id AND d.delivery_layout = 'log'
        WHERE ds.destination_id = c.destination_id AND ds.source_id = c.source_id)`);
}

/** A snapshot in which every transaction up to `xid` (an xid8 expression) is visible and none after it: a cursor starting after it. */
function everythingUpToSql(xid: string): string {
  return `format('%s:%s:', ${xid}::text::bigint + 1, ${xid}::text::bigint + 1)::pg_snapshot`;
}

/**
 * Moves destinations onto the log (the kinds that batch, when the log is
 * on): from now on ingest queues no deliveries for them, and their cursors
 * start at the log's head. Deliveries already queued stay where they are
 * and are delivered per call; `log_since` lets the loader skip a call that
 * a statement still reading the old layout routed per call.
 */
export async function moveOntoLog(db: Queryable, destinationIds: readonly string[], now: Date): Promise<void> {
  if (destinationIds.length === 0) return;
  await db.query({
    text: `UPDATE destinations SET delivery_layout = 'log', log_since = $2, log_from = pg_current_xact_id()
            WHERE id = ANY($1::uuid[]) AND delivery_layout = 'per_call'`,
    values: [destinationIds, now],
  });
  await syncLogCursors(db);
}

/**
 * A new destination onto the log in the transaction that creates it, if
 * its kind batches: no call was routed to it per call, so no move window
 * (`log_since` stays NULL) and its cursors start at its connections.
 */
export async function placeOnLog(db: Queryable, destinationId: string): Promise<void> {
  const result = await db.query({
    text: `UPDATE destinations d SET delivery_layout = 'log', log_from = pg_current_xact_id()
            WHERE d.id = $1 AND d.delivery_layout = 'per_call' AND ${batchingKindSql}`,
    values: [destinationId],
  });
  if (result.rowCount === 1) await syncLogCursors(db);
}
