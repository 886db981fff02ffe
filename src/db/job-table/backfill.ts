import type pg from "pg";
import { withTransaction } from "../pool.js";
import { enqueueCte, notifyIfQueued, orderingKeySql } from "./enqueue.js";

/**
 * Queues deliveries of these stored calls to a destination, skipping any it
 * already has a delivery for (so a backfill run twice creates none twice),
 * in acceptance order (per-user ordering). A per-destination lock taken
 * before the insert's snapshot keeps two backfills of one destination from
 * both seeing a call as missing. Returns how many were queued.
 */
export async function enqueueBackfill(pool: pg.Pool, destinationId: string, messagePks: readonly string[], at: Date): Promise<number> {
  if (messagePks.length === 0) return 0;
  return withTransaction(pool, async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock(hashtext('waypost-backfill:' || $1::text))", [destinationId]);
    const result = await tx.query<{ queued: number }>(
      `WITH ${enqueueCte(`SELECT $1::uuid, m.id, m.source_id, $2::timestamptz, $2::timestamptz,
              ${orderingKeySql("m.user_id", "(m.payload::json ->> 'anonymousId')")}
         FROM messages m
        WHERE m.id = ANY ($3::bigint[])
          AND NOT EXISTS (SELECT 1 FROM delivery_history h WHERE h.destination_id = $1 AND h.message_pk = m.id)
          -- The queue has no message index: one read of the destination's queued deliveries per batch.
          AND NOT EXISTS (SELECT 1 FROM delivery_queue q WHERE q.destination_id = $1 AND q.message_pk = m.id)
        ORDER BY m.id`)}
       SELECT (SELECT count(*)::int FROM queued) AS queued, ${notifyIfQueued()}`,
      [destinationId, at, messagePks],
    );
    return result.rows[0]!.queued;
  });
}
