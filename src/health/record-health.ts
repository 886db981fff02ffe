import type { DeliveryCompletion, JobTableDriver } from "../db/job-table/index.js";
import { writeHealthRows } from "../db/queries/destination-health.js";
import type { Queryable } from "../db/pool.js";
import { foldHealth, initialHealth, type HealthPolicy, type Transition } from "./circuit.js";
import { groupHealthEvents } from "./health-events.js";

/**
 * Folds a batch of recorded deliveries into their destinations' health rows:
 * one locked read and one write per batch, whatever its size. Run it in the
 * transaction that recorded the deliveries, with only the completions that
 * were written (a result from a lost lease says nothing new). Returns the
 * circuit transitions this write made: the caller announces them, and no
 * other process will.
 */
export async function recordHealth(
  tx: Queryable,
  written: readonly DeliveryCompletion[],
  policy: HealthPolicy,
  now: Date,
  // The job-table driver's: on Citus, one statement per row's shard.
  lock: JobTableDriver["lockHealthRows"],
): Promise<Transition[]> {
  const events = groupHealthEvents(written);
  if (events.size === 0) return [];
  const rows = await lock(tx, [...events.keys()], now);
  const transitions: Transition[] = [];
  const next = [...events].map(([destinationId, list]) => {
    const folded = foldHealth(rows.get(destinationId) ?? initialHealth(destinationId), list, policy);
    transitions.push(...folded.transitions);
    return folded.row;
  });
  await writeHealthRows(tx, next, now);
  return transitions;
}
