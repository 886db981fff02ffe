import type { Queryable } from "../pool.js";

/**
 * A call's place in the log: the id of the transaction that stored it and
 * its row id, compared in that order. Transaction ids are handed out when a
 * transaction first writes, not when it commits, so positions alone do not
 * say what has committed: a reader reads in bursts between two snapshots
 * (LogWindow), and orders only the calls of one burst by position.
 */
export interface LogPosition {
  /** xid8, as text. */
  xid: string;
  /** messages.id, as text. */
  id: string;
}

/** Before every position: where a burst's paging starts. */
export const logStart: LogPosition = { xid: "0", id: "0" };

/**
 * Where a reader is: the calls visible in `seen` were read; the burst now
 * read holds those visible in `upTo` and not in `seen` (pg_snapshot text),
 * paged by position past `after`. `upTo` is null between bursts: the next
 * read takes the snapshot it reads under as its bound.
 */
export interface LogWindow {
  seen: string;
  upTo: string | null;
  after: LogPosition;
}

/** A stored call as a cursor reads it. */
export interface LoggedCall {
  position: LogPosition;
  /** messages.id */
  messagePk: string;
  messageId: string;
  type: string;
  userId: string | null;
  receivedAt: Date;
  sentAt: Date | null;
  payload: string;
  traceparent: string | null;
  tracestate: string | null;
  /**
   * Set only while the destination moves onto the log: the call already
   * has a delivery row there (a statement that read the old layout routed
   * it per call), so the loader skips it.
   */
  routedPerCall: boolean;
}

export interface ReadLogOptions {
  destinationId: string;
  sourceId: string;
  window: LogWindow;
  limit: number;
  /**
   * Calls received before this are looked up among the destination's
   * delivery rows (it moved onto the log lately: see LoggedCall.routedPerCall).
   * Null: none is.
   */
  checkPerCallBefore: Date | null;
}

/** A page of a burst, and the snapshot that bounds the burst. */
export interface LogPage {
  calls: LoggedCall[];
  upTo: string;
}

/**
 * The calls of a source committed after `seen` and before `upTo`, past
 * `after` in position order: those not visible in `seen` are the ones at or
 * past its xmax and the ones it saw in progress (its xip list), read as two
 * index scans of messages_log_idx, each in order and limited, then merged.
 * `$1` source, `$2` seen, `$3` up to (NULL: now), `$4`/`$5` after, `$6` limit.
 */
function unreadSql(columns: string, limit: string, inProgress: boolean): string {
  const common = `m.source_id = $1 AND (m.log_xid, m.id) > ($4::xid8, $5::bigint)
       AND pg_visible_in_snapshot(m.log_xid, coalesce($3::pg_snapshot, pg_current_snapshot()))`;
  const past = `(SELECT ${columns} FROM messages m
            WHERE m.log_xid >= pg_snapshot_xmax($2::pg_snapshot) AND ${common}
            ORDER BY m.log_xid, m.id LIMIT ${limit})`;
  if (!inProgress) return past;
  // Bounded by the snapshot's xmin and xmax as well: an index range (ANY over
  // the list alone made Postgres filter every call of the source).
  return `${past}
          UNION ALL
          (SELECT ${columns} FROM messages m
            WHERE m.log_xid >= pg_snapshot_xmin($2::pg_snapshot) AND m.log_xid < pg_snapshot_xmax($2::pg_snapshot)
              AND m.log_xid = ANY(ARRAY(SELECT pg_snapshot_xip($2::pg_snapshot))) AND ${common}
            ORDER BY m.log_xid, m.id LIMIT ${limit})`;
}

const readStatement = (inProgress: boolean) => `
  -- Times as epoch milliseconds: a number is parsed far faster than a timestamptz's text, for every call of the page.
  SELECT coalesce($3::pg_snapshot, pg_current_snapshot())::text AS up_to, c.id, c.log_xid, c.message_id, c.type, c.user_id,
         (extract(epoch FROM c.received_at) * 1000)::float8 AS received_at, (extract(epoch FROM c.sent_at) * 1000)::float8 AS sent_at,
         c.payload, c.traceparent, c.tracestate,
         ($7::timestamptz IS NOT NULL AND c.received_at < $7::timestamptz AND (
            EXISTS (SELECT 1 FROM delivery_queue q WHERE q.destination_id = $8 AND q.message_pk = c.id)
            OR EXISTS (SELECT 1 FROM delivery_history h WHERE h.destination_id = $8 AND h.message_pk = c.id))) AS routed_per_call
    FROM (SELECT 1) one LEFT JOIN LATERAL (
      SELECT * FROM (${unreadSql(
        "m.id, m.log_xid, m.message_id, m.type, m.user_id, m.received_at, m.sent_at, m.payload, m.traceparent, m.tracestate",
        "$6",
        inProgress,
      )}) u ORDER BY u.log_xid, u.id LIMIT $6
    ) c ON true`;

/** The statement for a `seen` with transactions in progress, and the one for a `seen` without (the common case: one scan). */
const readStatements = { inProgress: readStatement(true), none: readStatement(false) };

/** Whether a snapshot's text (xmin:xmax:xip,...) lists transactions in progress. */
function hasInProgress(snapshot: string): boolean {
  return !snapshot.endsWith(":");
}

interface ReadRow {
  up_to: string;
  id: string | null;
  log_xid: string;
  message_id: string;
  type: string;
  user_id: string | null;
  received_at: number;
  sent_at: number | null;
  payload: string;
  traceparent: string | null;
  tracestate: string | null;
  routed_per_call: boolean;
}

/** The next page of a cursor's burst, at most `limit` calls, and the burst's bound. */
export async function readLog(db: Queryable, options: ReadLogOptions): Promise<LogPage> {
  const { window } = options;
  const inProgress = hasInProgress(window.seen);
  const result = await db.query<ReadRow>({
    name: inProgress ? "waypost-read-log-xip" : "waypost-read-log",
    text: inProgress ? readStatements.inProgress : readStatements.none,
    values: [
      options.sourceId,
      window.seen,
      window.upTo,
      window.after.xid,
      window.after.id,
      options.limit,
      options.checkPerCallBefore,
      options.destinationId,
    ],
  });
  const upTo = result.rows[0]!.up_to;
  const calls = result.rows
    .filter((row) => row.id !== null)
    .map((row) => ({
      position: { xid: String(row.log_xid), id: row.id! },
      messagePk: row.id!,
      messageId: row.message_id,
      type: row.type,
      userId: row.user_id,
      receivedAt: new Date(row.received_at),
      sentAt: row.sent_at === null ? null : new Date(row.sent_at),
      payload: row.payload,
      traceparent: row.traceparent,
      tracestate: row.tracestate,
      routedPerCall: row.routed_per_call,
    }));
  return { calls, upTo };
}

/**
 * Whether the cursor `cursor` (an alias of log_cursors) has calls to read
 * now: the claim asks this of each cursor before it leases it, so an idle
 * cursor costs two index probes, not a lease and a read.
 */
export function hasCallsPastSql(cursor: string): string {
  // A burst whose last page was full ends with an empty read: a cursor left there (up_to set) is taken once to end it.
  const common = `m.source_id = ${cursor}.source_id AND (m.log_xid, m.id) > (${cursor}.after_xid, ${cursor}.after_id)
       AND pg_visible_in_snapshot(m.log_xid, coalesce(${cursor}.up_to, pg_current_snapshot()))`;
  return `(${cursor}.up_to IS NOT NULL
           OR EXISTS (SELECT 1 FROM messages m WHERE m.log_xid >= pg_snapshot_xmax(${cursor}.seen) AND ${common})
           OR EXISTS (SELECT 1 FROM messages m
                       WHERE m.log_xid >= pg_snapshot_xmin(${cursor}.seen) AND m.log_xid < pg_snapshot_xmax(${cursor}.seen)
                         AND m.log_xid = ANY(ARRAY(SELECT pg_snapshot_xip(${cursor}.seen))) AND ${common}))`;
}

/**
 * The window a burst leaves for the next page: when the page was short the
 * burst is over (everything visible in its bound was read) and the next
 * read starts a new one; otherwise it goes on past the page's last call.
 */
export function nextWindow(window: LogWindow, page: LogPage, limit: number): LogWindow {
  if (page.calls.length < limit) return burstEnd(page.upTo);
  return { seen: window.seen, upTo: page.upTo, after: page.calls.at(-1)!.position };
}

/** The window after a burst read to its end under the bound `upTo`: the next read takes a new snapshot. */
export function burstEnd(upTo: string): LogWindow {
  return { seen: upTo, upTo: null, after: logStart };
}

/**
 * That the cursor `c` (an alias of log_cursors) has not read the call `m`
 * (of messages) yet: committed after its last burst's snapshot, and not
 * read in its current burst. The xmin bound lets an index scan start there.
 */
export function unreadByCursorSql(c: string, m: string): string {
  return `${m}.log_xid >= pg_snapshot_xmin(${c}.seen) AND NOT pg_visible_in_snapshot(${m}.log_xid, ${c}.seen)
          AND (${c}.up_to IS NULL OR NOT pg_visible_in_snapshot(${m}.log_xid, ${c}.up_to) OR (${m}.log_xid, ${m}.id) > (${c}.after_xid, ${c}.after_id))`;
}

/** That the batch `b` (an alias of log_batches) holds the call `m`: committed between its snapshots, in its range. */
export function heldByBatchSql(b: string, m: string): string {
  return `(${b}.to_xid, ${b}.to_id) >= (${m}.log_xid, ${m}.id) AND (${b}.from_xid, ${b}.from_id) < (${m}.log_xid, ${m}.id)
          AND NOT pg_visible_in_snapshot(${m}.log_xid, ${b}.seen) AND pg_visible_in_snapshot(${m}.log_xid, ${b}.up_to)`;
}
