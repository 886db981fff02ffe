import type { Queryable } from "../pool.js";

/**
 * Deletes up to `limit` delivered batches that finished before the cutoff:
 * the calls they held are past retention too (or gone), and with them the
 * deliveries derived from the batch. Small batches keep each statement
 * short; the table holds a row per page run, not per call.
 */
export async function purgeOldLogBatches(db: Queryable, cutoff: Date, limit: number): Promise<number> {
  const result = await db.query(
    `DELETE FROM log_batches WHERE ctid = ANY(ARRAY(SELECT ctid FROM log_batches WHERE finished_at < $1 LIMIT $2))`,
    [cutoff, limit],
  );
  return result.rowCount ?? 0;
}
