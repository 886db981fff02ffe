import type { Queryable } from "../pool.js";
import type { JobTableLayout } from "./layout.js";

/**
 * On Citus, makes the current transaction reach the shards of a
 * distributed table over one connection per node, one after the other,
 * instead of in parallel. Citus refuses to modify a reference table
 * (audiences, audience_members, destinations...) later in a transaction
 * that already ran a parallel multi-shard statement ("cannot modify table
 * ... because there was a parallel operation on a distributed table"):
 * a deletion and an audience sync do both. Call it first in the
 * transaction. On one Postgres it does nothing (no statement is sent).
 */
export async function reachShardsSequentially(tx: Queryable, layout: JobTableLayout | undefined): Promise<void> {
  if (layout !== "citus") return;
  await tx.query("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'");
}
