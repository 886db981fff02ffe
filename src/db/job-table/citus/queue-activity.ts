import type { Queryable } from "../../pool.js";
import { analyzeJobTableIfStale, type QueueActivity, vacuumJobTableIfNeeded } from "../purge.js";

/**
 * The queue's activity on Citus: the coordinator's delivery_queue is an
 * empty shell, the rows live in the shards on the workers, so each shard's
 * statistics are read where it is and summed.
 */
export async function readQueueActivityOnCitus(db: Queryable): Promise<QueueActivity | undefined> {
  const result = await db.query<{ success: boolean; result: string }>(
    `SELECT success, result FROM run_command_on_shards('delivery_queue', $cmd$
       SELECT concat_ws(',', s.n_dead_tup, s.n_live_tup, s.n_mod_since_analyze, greatest(c.reltuples, 0))
         FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
        WHERE s.relid = '%s'::regclass
     $cmd$)`,
  );
  const shards = result.rows.filter((row) => row.success && row.result !== "");
  if (shards.length === 0) return undefined;
  const sum = { dead: 0, live: 0, changed: 0, analyzedRows: 0 };
  for (const row of shards) {
    const [dead, live, changed, analyzed] = row.result.split(",").map(Number);
    sum.dead += dead ?? 0;
    sum.live += live ?? 0;
    sum.changed += changed ?? 0;
    sum.analyzedRows += analyzed ?? 0;
  }
  return sum;
}

/** VACUUM on Citus: Citus runs a distributed table's VACUUM on each of its shards; the check reads the shards' figures. */
export async function vacuumJobTableIfNeededOnCitus(db: Queryable, activity?: QueueActivity): Promise<boolean> {
  return vacuumJobTableIfNeeded(db, activity ?? (await readQueueActivityOnCitus(db)));
}

/** ANALYZE on Citus, as VACUUM above. */
export async function analyzeJobTableIfStaleOnCitus(db: Queryable, activity?: QueueActivity): Promise<boolean> {
  return analyzeJobTableIfStale(db, activity ?? (await readQueueActivityOnCitus(db)));
}
