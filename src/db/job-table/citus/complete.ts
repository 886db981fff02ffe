import type { Queryable } from "../../pool.js";
import { withTransaction } from "../../pool.js";
import { completeStatementSql } from "../complete.js";
import type { DeliveryCompletion } from "../delivery-completion.js";
import { completionParameters } from "../completion-records.js";
import { byDestination, isPool } from "./per-destination.js";

const completeOnShard = completeStatementSql("$3::uuid");

/**
 * A batch of completions on Citus: the single-node statement once per
 * destination, filtered to it (its deliveries, history, attempts and batch
 * attempts share a shard). The batch stays one transaction, as on one
 * Postgres (Citus commits it on every worker it touched, with two-phase
 * commit), so the completion writer's bisection over a refused row never
 * finds half a batch written.
 */
export async function completeDeliveriesOnCitus(db: Queryable, completions: readonly DeliveryCompletion[]): Promise<Set<string>> {
  if (completions.length === 0) return new Set();
  const run = async (tx: Queryable) => {
    const written = new Set<string>();
    for (const [destinationId, group] of byDestination(completions)) {
      const parameters = completionParameters(group);
      const result = await tx.query<{ id: string }>({
        text: completeOnShard,
        values: [parameters.records, parameters.batchRows, destinationId],
      });
      for (const row of result.rows) written.add(row.id);
    }
    return written;
  };
  return isPool(db) ? withTransaction(db, run) : run(db);
}
