import type { Queryable } from "../pool.js";
import { attemptsReader } from "./attempts-of.js";

const succeeded = attemptsReader<{ subscription: string }>(
  (attempts) => `SELECT subscription FROM ${attempts} a
    WHERE subscription IS NOT NULL
    GROUP BY attempt, subscription
   HAVING bool_and(outcome = 'success')`,
);

/**
 * The parts of a delivery that succeeded in an earlier attempt, for a kind
 * whose calls go as parts (each attempt entry names its part in
 * `subscription`: an integration's subscriptions): those with entries in
 * some attempt, all successes. A retry does not run them again.
 */
export async function succeededParts(db: Queryable, destinationId: string, deliveryId: string): Promise<Set<string>> {
  return new Set((await succeeded(db, [destinationId], [deliveryId])).map((r) => r.subscription));
}
