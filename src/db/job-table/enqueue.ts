import { notifyWhen } from "./notify.js";

/**
 * The CTE that queues deliveries, shared by every producer (ingest, audience
 * syncs, delete notifications), so a new delivery always starts the same
 * way: `pending`, due at `run_at`, no lease. `rows` is a SELECT yielding
 * (destination_id, message_pk, source_id, run_at, created_at). Returns
 * `name AS (...)`, one row per delivery queued, for the caller's WITH list.
 */
export function enqueueCte(rows: string, name = "queued"): string {
  return `${name} AS (
       INSERT INTO deliveries (destination_id, message_pk, source_id, run_at, created_at)
       ${rows}
       RETURNING 1
     )`;
}

/** The select-list item that wakes the loops when the `enqueueCte` named `name` queued anything. */
export function notifyIfQueued(name = "queued"): string {
  return notifyWhen(`EXISTS (SELECT 1 FROM ${name})`);
}
