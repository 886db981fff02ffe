import type { Queryable } from "../pool.js";
import { reopenCtes, transitionSql } from "./fence.js";
import { notifyWhen } from "./notify.js";

/** A replayed delivery waits as a retry (its attempts so far stay on record). */
export const replayStatus = "'retrying'::delivery_status";

/**
 * A replay's new state for a delivery still in the queue, due at `runAt`
 * (an SQL expression): every URL, and a fresh retry window (the window runs from first_attempt_at, cleared here).
 * The first attempt ever made is kept in earliest_attempt_at, so the API's
 * first attempt time still says when the delivery was first tried.
 * Shared with the bulk replay (replay-bulk.ts); a finished delivery gets the
 * same state from `reopenCtes` (fence.ts).
 */
export function replaySet(runAt: string): string {
  return `run_at = ${runAt}, first_attempt_at = NULL, retry_urls = NULL,
              earliest_attempt_at = coalesce(d.earliest_attempt_at, d.first_attempt_at)`;
}

// A waiting (retrying) delivery is updated in the queue; a failed or expired
// one comes back from the history.
const replayStatement = `WITH waiting AS (
       ${transitionSql({
         fence: { kind: "revoke" },
         status: replayStatus,
         set: replaySet("$3"),
         where: "d.destination_id = $1 AND d.id = $2 AND d.status = 'retrying'",
         returning: "1",
       })}
     ), ${reopenCtes("reopened", {
       using: "(SELECT 1) one",
       where: "h.destination_id = $1 AND h.id = $2 AND h.status IN ('failed', 'expired')",
       runAt: "$3::timestamptz",
     })}, replayed AS (
       SELECT 1 FROM waiting UNION ALL SELECT 1 FROM reopened
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
