import type { Queryable } from "../pool.js";
import { finishCtes } from "./fence.js";

const cancelStatement = `WITH ${finishCtes("cancelled", {
  fence: { kind: "revoke" },
  status: "'cancelled'",
  finalizedAt: "$2::timestamptz",
  where: "d.destination_id = $1",
})}
  SELECT count(*)::int AS n FROM cancelled`;

/**
 * Cancels a destination's unfinished deliveries (it is being deleted). The
 * lease is revoked, so an attempt still in flight cannot overwrite it.
 * Returns how many were cancelled.
 */
export async function cancelDestinationDeliveries(db: Queryable, destinationId: string, now: Date): Promise<number> {
  const result = await db.query<{ n: number }>(cancelStatement, [destinationId, now]);
  return result.rows[0]?.n ?? 0;
}
