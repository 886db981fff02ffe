import type { Queryable } from "../pool.js";
import type { DeliveryCompletion, DeliveryStatus } from "./delivery-completion.js";
import { finishCtes, transitionSql } from "./fence.js";

export interface RefusedCompletion {
  completion: DeliveryCompletion;
  /** The database's error, recorded on the delivery. */
  error: string;
  now: Date;
  /** When a delivery still under the limit is tried again. */
  retryAt: Date;
  /** Refusals after which the delivery fails. */
  maxRefusals: number;
}

// $1 destination, $2 id, $3 the claim's token, $4 the limit, $5 the error,
// $6 retry at, $7 now, $8 whether a request was sent. The last refusal
// fails the delivery (it moves to the history); earlier ones hand it back
// for a later try.
const final = "d.refused_completions + 1 >= $4";
const firstAttempt = "CASE WHEN $8 THEN coalesce(d.first_attempt_at, $7::timestamptz) ELSE d.first_attempt_at END";
const refuseStatement = `WITH handed_back AS (
       ${transitionSql({
         fence: { kind: "held", token: "$3" },
         set: `refused_completions = d.refused_completions + 1, last_error = $5, run_at = $6::timestamptz,
              first_attempt_at = ${firstAttempt}`,
         where: `d.destination_id = $1 AND d.id = $2 AND NOT (${final})`,
         returning: "d.status",
       })}
     ), ${finishCtes("failed", {
       fence: { kind: "held", token: "$3" },
       status: "'failed'",
       finalizedAt: "$7::timestamptz",
       set: { refused_completions: "d.refused_completions + 1", last_error: "$5", first_attempt_at: firstAttempt },
       where: `d.destination_id = $1 AND d.id = $2 AND ${final}`,
     })}
     SELECT status FROM handed_back UNION ALL SELECT status FROM failed`;

/**
 * The lease holder's fallback when the database refused its result (the
 * completion statement failed for this one row): a simpler change that
 * writes no attempt rows, only the refusal, counted on the delivery with the
 * error. Under `maxRefusals` the delivery is handed back (its lease ended)
 * to be tried again at `retryAt`; at the limit it fails with the error. The
 * first attempt time is set when a request was sent, so the retry deadline
 * runs from it as from any attempt. Returns the delivery's new status, or
 * undefined when the lease had moved on (nothing changed).
 */
export async function recordRefusedCompletion(db: Queryable, refused: RefusedCompletion): Promise<DeliveryStatus | undefined> {
  const c = refused.completion;
  const result = await db.query<{ status: DeliveryStatus }>(refuseStatement, [
    c.destinationId,
    c.id,
    c.leaseToken,
    refused.maxRefusals,
    refused.error,
    refused.retryAt,
    refused.now,
    c.attempted,
  ]);
  return result.rows[0]?.status;
}
