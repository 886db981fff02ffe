import type { Queryable } from "./store-messages.js";

/**
 * Expires pending deliveries of disabled destinations once their retry
 * window is over (measured from the first attempt, or from creation when
 * there was none). Enabled destinations' deliveries expire in the loop.
 * Moving the lease token on keeps an attempt in flight from overwriting it.
 */
export async function expirePausedDeliveries(db: Queryable, now: Date, deadlineMs: number): Promise<number> {
  const result = await db.query(
    `UPDATE deliveries SET status = 'expired', finalized_at = $1, lease_owner = NULL, leased_until = NULL, lease_token = lease_token + 1
      WHERE status IN ('pending', 'retrying')
        AND destination_id IN (SELECT id FROM destinations WHERE NOT enabled)
        AND coalesce(first_attempt_at, created_at) < $1::timestamptz - make_interval(secs => $2::double precision / 1000)`,
    [now, deadlineMs],
  );
  return result.rowCount ?? 0;
}

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
