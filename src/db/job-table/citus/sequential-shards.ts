import type { Queryable } from "../../pool.js";

/**
 * Makes the current transaction reach the shards of a distributed table
 * over one connection per node, one after the other, instead of in
 * parallel. Citus refuses to modify a reference table (audiences,
 * audience_members, destinations...) later in a transaction that already
 * ran a parallel multi-shard statement ("cannot modify table ... because
 * there was a parallel operation on a distributed table"): a deletion and
 * an audience sync do both.
 */
export async function reachShardsSequentiallyOnCitus(tx: Queryable): Promise<void> {
  await tx.query("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'");
}
