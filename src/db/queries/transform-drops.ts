import type { Queryable } from "../pool.js";

/**
 * Records that a destination's transform dropped a delivery's call (it
 * returned null): the call's fate there is filtered, reason transform.
 * Reads the delivery's message from the job table by (destination, id).
 */
export async function recordTransformDrop(db: Queryable, destinationId: string, deliveryId: string, at: Date): Promise<void> {
  await db.query(
    `INSERT INTO call_fates (message_pk, destination_id, fate, reason, recorded_at)
     SELECT d.message_pk, d.destination_id, 'filtered', 'transform', $3 FROM deliveries d
      WHERE d.destination_id = $1 AND d.id = $2
     ON CONFLICT (message_pk, destination_id) DO UPDATE SET fate = 'filtered', reason = 'transform', recorded_at = $3`,
    [destinationId, deliveryId, at],
  );
}
