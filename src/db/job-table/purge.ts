import { inTransaction, type Queryable } from "../pool.js";
import { removeMessages } from "./message-removal.js";
import { unreadByCursorSql } from "../call-log/log-read.js";

/**
 * Deletes up to `limit` messages received before the cutoff that have no
 * delivery left in the queue; their finished deliveries and attempts, those
 * not already dropped with their day's partition (days.ts), go with them
 * (message-removal.ts). Small batches keep each transaction short. Three
 * steps, each over one table, so the same statements run on Citus, where
 * messages and the queue live on different shards and cannot be joined:
 * the candidates, those of them still queued (the queue has no index on
 * message_pk, as it would cost every delivery queued, so this reads it
 * whole, as the anti-join did: the queue holds the backlog, not the past),
 * then the rest removed.
 */
export async function purgeOldMessages(db: Queryable, cutoff: Date, limit: number): Promise<number> {
  return inTransaction(db, async (tx) => {
    const candidates = await tx.query<{ id: string }>("SELECT id FROM messages WHERE received_at < $1 LIMIT $2", [cutoff, limit]);
    if (candidates.rows.length === 0) return 0;
    const ids = candidates.rows.map((r) => r.id);
    const queued = await tx.query<{ message_pk: string }>(
      "SELECT DISTINCT message_pk FROM delivery_queue WHERE message_pk = ANY($1::bigint[])",
      [ids],
    );
    const waiting = new Set(queued.rows.map((r) => r.message_pk));
    for (const id of await unreadByLogCursors(tx, ids)) waiting.add(id);
    return removeMessages(
      tx,
      ids.filter((id) => !waiting.has(id)),
    );
  });
}

/**
 * Of these messages, those a call log cursor has not read yet (a
 * destination held back for longer than retention): kept, as a queued
 * delivery keeps its message. Only where cursors exist (never on Citus,
 * where the log is off and log_cursors, a table of the coordinator's,
 * cannot be joined to messages).
 */
async function unreadByLogCursors(tx: Queryable, ids: readonly string[]): Promise<string[]> {
  const any = await tx.query<{ any: boolean }>("SELECT EXISTS (SELECT 1 FROM log_cursors) AS any");
  if (!any.rows[0]?.any) return [];
  const result = await tx.query<{ id: string }>(
    `SELECT m.id FROM messages m
      WHERE m.id = ANY($1::bigint[]) AND m.log_xid IS NOT NULL
        AND EXISTS (SELECT 1 FROM log_cursors c WHERE c.source_id = m.source_id AND ${unreadByCursorSql("c", "m")})`,
    [ids],
  );
  return result.rows.map((r) => r.id);
}

/**
 * VACUUMs the queue when dead row versions have piled up (20,000, and a
 * tenth of its live rows), as `activity` shows them (read now if not given). Claims,
 * heartbeats and retries update its rows and every finished delivery leaves
 * it, and the claim scans the head of its lane index: if nothing vacuums,
 * every claim wades through more dead entries and delivery slows to a crawl.
 * Autovacuum is tuned for this table, but it may be switched off or too slow
 * on a given server, so Waypost checks for itself. SKIP_LOCKED: another
 * process vacuuming is enough. The history and the attempts are append-only
 * and need no such care. Returns whether it vacuumed.
 */
export async function vacuumJobTableIfNeeded(db: Queryable, activity?: QueueActivity): Promise<boolean> {
  const seen = activity ?? (await readQueueActivity(db));
  if (!seen || seen.dead < 20_000 || seen.dead < seen.live * 0.1) return false;
  await db.query("VACUUM (SKIP_LOCKED, ANALYZE) delivery_queue");
  return true;
}

/**
 * ANALYZEs the queue when its rows changed a lot since its statistics were
 * taken (10,000 rows, and a fifth of the rows it had then), as `activity`
 * shows them (read now if not given). The claim, heartbeat and completion are planned per call, but
 * from these statistics: taken while the queue was nearly empty, they had
 * a claim read its whole lane (a bitmap scan and a sort) while a backfill
 * queued half a million. Autovacuum analyzes on its own when it runs;
 * Waypost does not count on it. Returns whether it analyzed.
 */
export async function analyzeJobTableIfStale(db: Queryable, activity?: QueueActivity): Promise<boolean> {
  const seen = activity ?? (await readQueueActivity(db));
  if (!seen || seen.changed < 10_000 || seen.changed < seen.analyzedRows * 0.2) return false;
  await db.query("ANALYZE (SKIP_LOCKED) delivery_queue");
  return true;
}

/** What the statistics collector knows of the queue: rows dead, live, changed since the last ANALYZE, and counted by it. */
export interface QueueActivity {
  dead: number;
  live: number;
  changed: number;
  analyzedRows: number;
}

/**
 * The queue's activity, read once for both checks above (maintenance runs
 * them every 2 s); undefined when the statistics have no row for it yet.
 */
export async function readQueueActivity(db: Queryable): Promise<QueueActivity | undefined> {
  const stats = await db.query<{ dead: string; live: string; changed: string; analyzed_rows: string }>(
    `SELECT s.n_dead_tup AS dead, s.n_live_tup AS live, s.n_mod_since_analyze AS changed, greatest(c.reltuples, 0) AS analyzed_rows
       FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
      WHERE s.relname = 'delivery_queue' AND s.schemaname = current_schema()`,
  );
  const row = stats.rows[0];
  return row && { dead: Number(row.dead), live: Number(row.live), changed: Number(row.changed), analyzedRows: Number(row.analyzed_rows) };
}
