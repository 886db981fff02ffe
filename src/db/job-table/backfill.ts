import type { Queryable } from "../pool.js";
import { enqueueCte, notifyIfQueued, orderingKeySql } from "./enqueue.js";

/**
 * The per-destination backfill lock, for the rest of the transaction: two
 * backfill pages of one destination never both see a call as missing.
 */
export async function lockDestinationBackfills(tx: Queryable, destinationId: string): Promise<void> {
  await tx.query("SELECT pg_advisory_xact_lock(hashtext('waypost-backfill:' || $1::text))", [destinationId]);
}

export interface BackfillPageResult {
  /** Calls of the page with no delivery at the destination (finished or waiting). */
  fresh: number;
  /** Of those, the ones the filter turned away. */
  filtered: number;
  /** Deliveries queued: the fresh calls the filter passed. */
  created: number;
}

/**
 * Queues deliveries of a page of stored calls to a destination, skipping
 * any it already has a delivery for (so a backfill run twice creates none
 * twice), in acceptance order (per-user ordering); `passes[i]` says whether
 * the destination's filter passes `messagePks[i]`. Run it in a transaction
 * holding lockDestinationBackfills, after checking that the destination
 * still exists. Counts what it did, for the job's progress.
 */
export async function enqueueBackfillPage(
  tx: Queryable,
  destinationId: string,
  page: { messagePks: readonly string[]; passes: readonly boolean[] },
  at: Date,
): Promise<BackfillPageResult> {
  if (page.messagePks.length === 0) return { fresh: 0, filtered: 0, created: 0 };
  const result = await tx.query<{ fresh: number; filtered: number; created: number }>(
    `WITH page AS (
       SELECT * FROM unnest($3::bigint[], $4::boolean[]) AS p (id, passes)
     ), fresh AS (
       SELECT p.id, p.passes FROM page p
        WHERE NOT EXISTS (SELECT 1 FROM delivery_history h WHERE h.destination_id = $1 AND h.message_pk = p.id)
          -- The queue has no message index: one read of the destination's queued deliveries per page.
          AND NOT EXISTS (SELECT 1 FROM delivery_queue q WHERE q.destination_id = $1 AND q.message_pk = p.id)
     ), ${enqueueCte(`SELECT $1::uuid, m.id, m.source_id, $2::timestamptz, $2::timestamptz,
              ${orderingKeySql("m.user_id", "(m.payload::json ->> 'anonymousId')")}
         FROM messages m JOIN fresh f ON f.id = m.id
        WHERE f.passes
        ORDER BY m.id`)}
     SELECT (SELECT count(*)::int FROM fresh) AS fresh,
            (SELECT count(*)::int FROM fresh WHERE NOT passes) AS filtered,
            (SELECT count(*)::int FROM queued) AS created,
            ${notifyIfQueued()}`,
    [destinationId, at, page.messagePks, page.passes],
  );
  return result.rows[0]!;
}
