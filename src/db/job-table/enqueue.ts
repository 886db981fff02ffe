import { notifyWhen } from "./notify.js";

/**
 * The CTE that queues deliveries, shared by every producer (ingest, audience
 * syncs, delete notifications), so a new delivery always starts the same
 * way: `pending`, due at `run_at`, no lease. `rows` is a SELECT yielding
 * (destination_id, message_pk, source_id, run_at, created_at, ordering_key),
 * the last from `orderingKeySql`. Delivery ids are drawn in the order the
 * SELECT yields its rows; per-user ordering takes them as acceptance order,
 * so a SELECT that can yield one user's calls out of order must ORDER BY.
 * Returns `name AS (...)`, one row per delivery queued, for the caller's
 * WITH list.
 */
export function enqueueCte(rows: string, name = "queued"): string {
  return `${name} AS (
       INSERT INTO delivery_queue (destination_id, message_pk, source_id, run_at, created_at, ordering_key)
       ${rows}
       RETURNING 1
     )`;
}

/**
 * The statement that queues deliveries whose ids the caller drew (from
 * `delivery_ids`, in acceptance order): on Citus a multi-row insert is split
 * by shard, and the column's default would not be drawn in the rows' order.
 * `rows` is a SELECT yielding (id, destination_id, message_pk, source_id,
 * run_at, created_at, ordering_key); the delivery starts as every other:
 * pending, due at `run_at`, no lease.
 */
export function enqueueWithIdsSql(rows: string): string {
  return `INSERT INTO delivery_queue (id, destination_id, message_pk, source_id, run_at, created_at, ordering_key)
  ${rows}`;
}

/**
 * The user key a delivery is ordered by (per-user ordering), as SQL: the
 * userId, else the anonymousId; NULL (not ordered) when the call has neither.
 */
export function orderingKeySql(userId: string, anonymousId: string): string {
  return `coalesce(nullif(${userId}, ''), nullif(${anonymousId}, ''))`;
}

/**
 * A queued delivery's user key when its destination orders per user, as SQL
 * reading its message: the message's userId, else the anonymousId in its
 * payload; NULL when the destination does not order (ingest writes keys only
 * for destinations that do; turning ordering on gives a destination's queued
 * deliveries theirs: src/db/queries/ordering-keys.ts).
 */
export function storedOrderingKeySql(destinationId: string, messagePk: string): string {
  return `(SELECT ${orderingKeySql("m.user_id", "m.payload::json ->> 'anonymousId'")}
             FROM messages m JOIN destinations o ON o.id = ${destinationId} AND o.ordering = 'per_user'
            WHERE m.id = ${messagePk})`;
}

/** The select-list item that wakes the loops when the `enqueueCte` named `name` queued anything. */
export function notifyIfQueued(name = "queued"): string {
  return notifyWhen(`EXISTS (SELECT 1 FROM ${name})`);
}
