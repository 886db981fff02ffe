import type { Queryable } from "../pool.js";

/**
 * Deletes up to `limit` messages received before the cutoff whose
 * deliveries are all finished; their deliveries and attempts go with them
 * (ON DELETE CASCADE). Small batches keep each transaction short.
 */
export async function purgeOldMessages(db: Queryable, cutoff: Date, limit: number): Promise<number> {
  const result = await db.query(
    `DELETE FROM messages WHERE id IN (
       SELECT m.id FROM messages m
        WHERE m.received_at < $1
          AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.message_pk = m.id AND d.status IN ('pending', 'retrying'))
        LIMIT $2)`,
    [cutoff, limit],
  );
  return result.rowCount ?? 0;
}

/**
 * VACUUMs the job table when dead row versions have piled up. Completions
 * update rows outside the claim index's page-level pruning, and the claim
 * scans the head of that index: if nothing vacuums, every claim wades through
 * more dead entries and delivery slows to a crawl. Autovacuum is tuned for
 * this table, but it may be switched off or too slow on a given server, so
 * Waypost checks for itself. SKIP_LOCKED: another process vacuuming is enough.
 * Returns whether it vacuumed.
 */
export async function vacuumJobTableIfNeeded(db: Queryable, minDead = 20_000, deadFraction = 0.1): Promise<boolean> {
  const stats = await db.query<{ dead: string; live: string }>(
    "SELECT n_dead_tup AS dead, n_live_tup AS live FROM pg_stat_user_tables WHERE relname = 'deliveries' AND schemaname = current_schema()",
  );
  const row = stats.rows[0];
  if (!row) return false;
  const dead = Number(row.dead);
  if (dead < minDead || dead < Number(row.live) * deadFraction) return false;
  await db.query("VACUUM (SKIP_LOCKED, ANALYZE) deliveries");
  return true;
}
