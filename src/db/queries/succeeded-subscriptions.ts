import type { Queryable } from "../pool.js";
import { selectFromAttemptsOf } from "./attempts-of.js";

/**
 * The subscriptions of an integration delivery that succeeded in an earlier
 * attempt: those with attempt entries in some attempt, all successes. A
 * retry does not run them again.
 */
export async function succeededSubscriptions(db: Queryable, destinationId: string, deliveryId: string): Promise<Set<string>> {
  const rows = await selectFromAttemptsOf<{ subscription: string }>(
    db,
    [destinationId],
    [deliveryId],
    (attempts) => `SELECT subscription FROM ${attempts} a
      WHERE subscription IS NOT NULL
      GROUP BY attempt, subscription
     HAVING bool_and(outcome = 'success')`,
  );
  return new Set(rows.map((r) => r.subscription));
}
