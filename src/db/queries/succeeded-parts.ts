import type { Queryable } from "../pool.js";
import { attemptsOfDeliveriesSql } from "./attempts-of.js";

/**
 * The parts of a delivery that succeeded in an earlier attempt, for a kind
 * whose calls go as parts (each attempt entry names its part in
 * `subscription`: an integration's subscriptions): those with entries in
 * some attempt, all successes. A retry does not run them again.
 */
export async function succeededParts(db: Queryable, destinationId: string, deliveryId: string): Promise<Set<string>> {
  const result = await db.query<{ subscription: string }>(
    `SELECT subscription FROM (${attemptsOfDeliveriesSql("$1::uuid[]", "$2::bigint[]")}) a
      WHERE subscription IS NOT NULL
      GROUP BY attempt, subscription
     HAVING bool_and(outcome = 'success')`,
    [[destinationId], [deliveryId]],
  );
  return new Set(result.rows.map((r) => r.subscription));
}
