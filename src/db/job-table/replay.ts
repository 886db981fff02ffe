import type { Queryable } from "../pool.js";
import { transitionSql } from "./fence.js";
import { notifyWhen } from "./notify.js";

const replayStatement = `WITH replayed AS (
       ${transitionSql({
         fence: { kind: "revoke" },
         set: "status = 'retrying', run_at = $3, finalized_at = NULL, first_attempt_at = NULL, retry_urls = NULL",
         where: "d.destination_id = $1 AND d.id = $2 AND d.status IN ('failed', 'expired', 'retrying')",
         returning: "1",
       })}
     )
     SELECT ${notifyWhen("true")} FROM replayed`;

/**
 * Replays a delivery: due now, with a fresh retry window and every URL, and
 * wakes the loops. The lease is revoked, so a result of an attempt still in
 * flight (a retrying delivery may be) is dropped. Returns false when the
 * delivery is not in a replayable state (or does not exist).
 */
export async function replayDelivery(db: Queryable, destinationId: string, id: string, now: Date): Promise<boolean> {
  const result = await db.query(replayStatement, [destinationId, id, now]);
  return (result.rowCount ?? 0) > 0;
}
