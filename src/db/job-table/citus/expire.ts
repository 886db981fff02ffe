import type { Queryable } from "../../pool.js";
import { expireStatementSql } from "../expire.js";
import { forEachLimited } from "./per-destination.js";

const expireOnShard = expireStatementSql("$3::uuid");

/**
 * Expiry on Citus: the destinations the claim holds back (paused, or with a
 * circuit not closed) are read first, then the single-node statement runs
 * once for each, filtered to it, on its shard. Returns how many expired.
 */
export async function expirePausedDeliveriesOnCitus(db: Queryable, now: Date, deadlineMs: number): Promise<number> {
  const held = await db.query<{ id: string }>(
    `SELECT id FROM destinations WHERE NOT enabled
     UNION SELECT destination_id FROM destination_health WHERE state <> 'closed'`,
  );
  const counts = await forEachLimited(held.rows, async ({ id }) => {
    const result = await db.query<{ n: number }>(expireOnShard, [now, deadlineMs, id]);
    return result.rows[0]?.n ?? 0;
  });
  return counts.reduce((sum, n) => sum + n, 0);
}
