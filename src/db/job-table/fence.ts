import { storedOrderingKeySql } from "./enqueue.js";

/**
 * The lease fence of the job table, written once. A claim takes a lease
 * (moves `lease_token` on); every other change of a delivery's state meets
 * it one way:
 *
 *   held     the holder's completion: only while the row carries its token
 *            and the lease has not ended; ends it (so it applies once)
 *   revoke   cancel, expire, replay: moves the token on, so a completion
 *            still in flight matches nothing
 *   extend   the holder's heartbeat: never revives a lease that ended
 *
 * and is built by one of three statements:
 *
 *   transitionSql  an UPDATE of a queued delivery
 *   finishCtes     a final state: out of the queue and into the history in one
 *                  statement (`finished_xid`, read by the finish feed, is the
 *                  transaction's id)
 *   reopenCtes     a finished delivery replayed: back into the queue (a revoke)
 *
 * No other module writes `lease_token`, `leased_until` or `lease_owner`, or
 * moves rows between the two tables: the fence holds because it is here only.
 */

/** How a transition meets the lease. */
export type Fence =
  /** Take a new lease: `until` and `owner` are SQL expressions. */
  | { kind: "grant"; until: string; owner: string }
  /** Apply only while the row carries this token (an SQL expression) and the lease is not ended; ends it. */
  | { kind: "held"; token: string }
  /** Take the lease from whoever holds it. */
  | { kind: "revoke" }
  /** Move the lease's end to `until` while the row carries this token and the lease has not ended (both SQL expressions). */
  | { kind: "extend"; token: string; until: string };

export interface Transition {
  fence: Fence;
  /**
   * The rows were found and locked earlier in the same statement with
   * `fenceCondition(fence, …)` (a primary-key probe per delivery, FOR
   * UPDATE), so the write does not repeat the check: locked, they cannot
   * have changed. Repeated here, the fence's `leased_until IS NOT NULL`
   * made the planner estimate the rows from statistics of a queue at rest
   * (no leases: nearly no rows) and scan the queue for every result.
   */
  fenceCheckedOnLock?: boolean;
  /** The new status (an SQL expression: pending or retrying), when the transition moves it. */
  status?: string;
  /** SET items besides the lease and status columns; may be empty. */
  set?: string;
  /** A FROM list (other tables or CTEs), without the keyword. */
  from?: string;
  /** The rows the transition applies to (the fence's condition is added). */
  where: string;
  /** A RETURNING list, without the keyword. */
  returning?: string;
}

/** The job table's alias in every transition: write conditions as `d.column`. */
export const jobAlias = "d";

function fenceSet(fence: Fence): string {
  switch (fence.kind) {
    case "grant":
      return `leased_until = ${fence.until}, lease_token = d.lease_token + 1, lease_owner = ${fence.owner}`;
    case "held":
      return "leased_until = NULL, lease_owner = NULL";
    case "revoke":
      return "leased_until = NULL, lease_owner = NULL, lease_token = d.lease_token + 1";
    case "extend":
      return `leased_until = ${fence.until}`;
  }
}

function fenceWhere(fence: Fence, alias = jobAlias, checkedOnLock = false): string {
  if (checkedOnLock) return "";
  switch (fence.kind) {
    case "held":
    case "extend":
      // A completion ends the lease (leased_until NULL) but keeps the token:
      // the holder's own later changes (a second result, a heartbeat) must
      // not apply after it.
      return ` AND ${alias}.lease_token = ${fence.token} AND ${alias}.leased_until IS NOT NULL`;
    default:
      return "";
  }
}

/**
 * The fence's condition on a queue row aliased `alias`, for a lookup that
 * finds and locks the rows (FOR UPDATE) before a transition writes them by
 * tuple id: the locked rows cannot change before the write.
 */
export function fenceCondition(fence: Fence, alias: string): string {
  return `true${fenceWhere(fence, alias)}`;
}

/** One UPDATE of a queued delivery with its lease fence; `status`, if given, must be pending or retrying. */
export function transitionSql(transition: Transition): string {
  const items = [transition.status === undefined ? "" : `status = ${transition.status}`, transition.set ?? "", fenceSet(transition.fence)];
  const set = items.filter((item) => item !== "").join(", ");
  return `UPDATE delivery_queue d SET ${set}${transition.from ? ` FROM ${transition.from}` : ""}
      WHERE (${transition.where})${fenceWhere(transition.fence, jobAlias, transition.fenceCheckedOnLock)}${
        transition.returning
          ? `
      RETURNING ${transition.returning}`
          : ""
      }`;
}

/** A move of queued deliveries into the history: they reach a final state. */
export interface Finish {
  /** `held` (the lease holder's result) or `revoke` (cancel, expire). */
  fence: Extract<Fence, { kind: "held" } | { kind: "revoke" }>;
  /** As Transition's: the rows were locked with the fence checked earlier in the statement. */
  fenceCheckedOnLock?: boolean;
  /** The final status, an SQL expression over `d` and `using`. */
  status: string;
  /** When it finished, an SQL expression. */
  finalizedAt: string;
  /** Columns of the history row that differ from the queued row's (SQL expressions over `d` and `using`). */
  set?: Partial<
    Record<
      | "attempt_count"
      | "first_attempt_at"
      | "retry_urls"
      | "refused_completions"
      | "last_error"
      | "batch_attempts"
      | "batch_attempt_numbers",
      string
    >
  >;
  /** A USING list (other tables or CTEs), without the keyword. */
  using?: string;
  where: string;
}

/** The history's columns, in the order `finishCtes` writes them. */
const historyColumns = [
  "destination_id",
  "id",
  "message_pk",
  "source_id",
  "status",
  "created_at",
  "finalized_at",
  "attempt_count",
  "lease_token",
  "first_attempt_at",
  "earliest_attempt_at",
  "retry_urls",
  "ordering_key",
  "refused_completions",
  "last_error",
  // The delivery's references to batch attempts (delivery_batch_attempts ids and its attempt numbers).
  "batch_attempts",
  "batch_attempt_numbers",
];

/**
 * Two CTEs, `${name}_left` and `${name}`, for the caller's WITH list: the
 * deliveries matching `where` (and the fence) leave the queue and are
 * written to the history. `${name}` returns each one's destination_id, id,
 * attempt_count and status.
 */
export function finishCtes(name: string, finish: Finish): string {
  const value: Record<string, string> = {
    status: `(${finish.status})::delivery_status`,
    finalized_at: finish.finalizedAt,
    lease_token: finish.fence.kind === "revoke" ? "d.lease_token + 1" : "d.lease_token",
    ...finish.set,
  };
  const returning = historyColumns.map((column) => `${value[column] ?? `d.${column}`} AS ${column}`).join(", ");
  return `${name}_left AS (
       DELETE FROM delivery_queue d${finish.using ? ` USING ${finish.using}` : ""}
        WHERE (${finish.where})${fenceWhere(finish.fence, jobAlias, finish.fenceCheckedOnLock)}
       RETURNING ${returning}
     ), ${name} AS (
       INSERT INTO delivery_history (${historyColumns.join(", ")})
       SELECT ${historyColumns.join(", ")} FROM ${name}_left
       RETURNING destination_id, id, attempt_count, status
     )`;
}

/** A replay of finished deliveries: back into the queue, due at `runAt`. */
export interface Reopen {
  /** A USING list naming the deliveries, without the keyword. */
  using: string;
  /** Which history rows `h` to move. */
  where: string;
  /** When they are due, an SQL expression. */
  runAt: string;
  /**
   * A FROM item `k(pk, key)`: the user keys of the deliveries' messages,
   * read beforehand, for a delivery finished while its destination did not
   * order per user. Absent: read from the messages in the statement (on
   * Citus they are on other shards, so the driver reads them first).
   */
  orderingKeysFrom?: string;
}

/**
 * Two CTEs, `${name}_left` and `${name}`: finished deliveries leave the
 * history and wait in the queue again as retries, with the token moved on
 * (a revoke: nothing in flight can complete them), every URL, and a fresh
 * retry window (first_attempt_at cleared; the first attempt ever made is
 * kept in earliest_attempt_at; its attempts, and its references to batch
 * attempts, kept). `${name}` returns destination_id and id.
 */
export function reopenCtes(name: string, reopen: Reopen): string {
  return `${name}_left AS (
       DELETE FROM delivery_history h USING ${reopen.using}
        WHERE ${reopen.where}
       RETURNING h.destination_id, h.id, h.message_pk, h.source_id, h.created_at, h.attempt_count, h.lease_token, h.ordering_key,
                 h.batch_attempts, h.batch_attempt_numbers, coalesce(h.earliest_attempt_at, h.first_attempt_at) AS earliest_attempt_at
     ), ${name} AS (
       INSERT INTO delivery_queue (destination_id, id, message_pk, source_id, status, run_at, created_at, attempt_count,
                                   lease_token, earliest_attempt_at, ordering_key, batch_attempts, batch_attempt_numbers)
       SELECT l.destination_id, l.id, l.message_pk, l.source_id, 'retrying', ${reopen.runAt}, l.created_at, l.attempt_count,
              l.lease_token + 1, l.earliest_attempt_at,
              -- Finished while its destination did not order: keyed now if it does.
              coalesce(l.ordering_key, ${reopen.orderingKeysFrom === undefined ? storedOrderingKeySql("l.destination_id", "l.message_pk") : "k.key"}),
              l.batch_attempts, l.batch_attempt_numbers
         FROM ${name}_left l${reopen.orderingKeysFrom === undefined ? "" : ` LEFT JOIN ${reopen.orderingKeysFrom} ON k.pk = l.message_pk`}
       RETURNING destination_id, id
     )`;
}

/**
 * Deliveries whose messages are being deleted (purge, a user's deletion, a
 * source's) leave the queue or the history: `DELETE ... RETURNING
 * destination_id, id` of the rows `d` matching `where`. No fence: nothing
 * is revoked, a completion still in flight then matches no row and changes
 * nothing.
 */
export function removalSql(table: "delivery_queue" | "delivery_history", where: string): string {
  return `DELETE FROM ${table} d WHERE ${where} RETURNING d.destination_id, d.id, d.batch_attempts, d.created_at`;
}

/**
 * Queued deliveries `d` given their per-user ordering key (per-user
 * ordering turned on for their destination): `key` is an SQL expression
 * over `from`. Not a change of state: the lease and the status stay.
 */
export function orderingKeysSql(key: string, from: string, where: string): string {
  return `UPDATE delivery_queue d SET ordering_key = ${key} FROM ${from} WHERE ${where}`;
}

/**
 * CTEs (`queued AS (...), finished AS (...)`) giving the exceptions of a
 * call log page their delivery rows: the CTE `exceptions` holds them
 * (message_pk, status, run_at, attempt_count, first_attempt_at, error,
 * retry_urls, ordering_key, created_at, and attempt_rows and
 * attempt_numbers, its batch attempt references or NULL). Each is created
 * when its call was received, as ingest creates a delivery per call. A
 * call waiting behind its user's exception, or retried alone, is queued as
 * pending or retrying; one that failed for good (or expired) is finished
 * at once. Born here, as enqueue.ts's deliveries are: no lease yet, so no
 * fence to hold (db/call-log/log-advance.ts writes them only after its own
 * fence, the cursor's, held).
 */
export function logExceptionCtes(exceptions: string, destination: string, source: string): string {
  return `queued AS (
    INSERT INTO delivery_queue (destination_id, message_pk, source_id, status, run_at, created_at, attempt_count, first_attempt_at,
                                earliest_attempt_at, retry_urls, ordering_key, last_error, batch_attempts, batch_attempt_numbers)
    SELECT ${destination}, e.message_pk, ${source}, e.status, e.run_at, e.created_at, e.attempt_count, e.first_attempt_at,
           e.first_attempt_at, e.retry_urls, e.ordering_key, e.error, e.attempt_rows, e.attempt_numbers
      FROM ${exceptions} e WHERE e.status IN ('pending', 'retrying')
    RETURNING 1
  ), finished AS (
    INSERT INTO delivery_history (destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count,
                                  lease_token, first_attempt_at, earliest_attempt_at, retry_urls, ordering_key, last_error,
                                  batch_attempts, batch_attempt_numbers)
    SELECT ${destination}, nextval('delivery_ids'), e.message_pk, ${source}, e.status, e.created_at, e.run_at, e.attempt_count, 0,
           e.first_attempt_at, e.first_attempt_at, e.retry_urls, e.ordering_key, e.error, e.attempt_rows, e.attempt_numbers
      FROM ${exceptions} e WHERE e.status NOT IN ('pending', 'retrying')
    RETURNING 1
  )`;
}
