import type { Queryable } from "../../pool.js";
import { fromRecord, type HealthRecord, type HealthRow } from "../../queries/destination-health.js";

/**
 * lockHealthRows on Citus: destination_health is distributed by destination,
 * and FOR UPDATE works only in a statement on one shard, so each row is
 * locked by a statement of its own, in id order as on one Postgres (two
 * writers never deadlock). A missing row is created first: a lock on a row
 * that does not exist yet would protect nothing.
 */
export async function lockHealthRowsOnCitus(tx: Queryable, destinationIds: readonly string[], now: Date): Promise<Map<string, HealthRow>> {
  const rows = new Map<string, HealthRow>();
  for (const id of [...new Set(destinationIds)].sort()) {
    const lock = () => tx.query<HealthRecord>("SELECT * FROM destination_health WHERE destination_id = $1 FOR UPDATE", [id]);
    let result = await lock();
    if (result.rows.length === 0) {
      await tx.query("INSERT INTO destination_health (destination_id, updated_at) VALUES ($1, $2) ON CONFLICT DO NOTHING", [id, now]);
      result = await lock();
    }
    for (const record of result.rows) rows.set(record.destination_id, fromRecord(record));
  }
  return rows;
}
