import type { Queryable } from "../pool.js";
import { attemptsReader } from "./attempts-of.js";

const succeeded = attemptsReader<{ subscription: string }>(
  (attempts) => `SELECT subscription FROM ${attempts} a
    WHERE subscription IS NOT NULL
    GROUP BY attempt, subscription
   HAVING bool_and(outcome = 'success')`,
);

/**
 * The subscriptions of an integration delivery that succeeded in an earlier
 * attempt: those with attempt entries in some attempt, all successes. A
 * retry does not run them again.
 */
export async function succeededSubscriptions(db: Queryable, destinationId: string, deliveryId: string): Promise<Set<string>> {
  return new Set((await succeeded(db, [destinationId], [deliveryId])).map((r) => r.subscription));
}
