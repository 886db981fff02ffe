import type { Queryable } from "../pool.js";
import { transitionSql } from "./fence.js";

const cancelStatement = transitionSql({
  fence: { kind: "revoke" },
  status: "'cancelled'::delivery_status",
  set: "finalized_at = $2",
  where: "d.destination_id = $1 AND d.status IN ('pending', 'retrying')",
});

/**
 * Cancels a destination's unfinished deliveries (it is being deleted). The
 * lease is revoked, so an attempt still in flight cannot overwrite it.
 * Returns how many were cancelled.
 */
export async function cancelDestinationDeliveries(db: Queryable, destinationId: string, now: Date): Promise<number> {
  const result = await db.query(cancelStatement, [destinationId, now]);
  return result.rowCount ?? 0;
}
