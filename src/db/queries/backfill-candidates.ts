import type { Queryable } from "../pool.js";
import { heldByBatchSql, unreadByCursorSql } from "../call-log/log-read.js";

export interface BackfillRange {
  destinationId: string;
  since: Date;
  until: Date;
}

// Calls of the destination's sources received in the range (delete
// notifications left out) with no finished delivery to it (the history's
// message index answers that per call), and, at a destination on the call
// log, none that its cursors delivered (a batch holds the call and routing
// did not hold it back) or have still to read: a backfill of such a
// destination sends per call what the log never sent it.
const received = `FROM messages m
  WHERE m.source_id IN (SELECT ds.source_id FROM destination_sources ds WHERE ds.destination_id = $1)
    AND m.received_at >= $2 AND m.received_at < $3 AND m.type <> 'delete'
    AND NOT EXISTS (SELECT 1 FROM delivery_history h WHERE h.destination_id = $1 AND h.message_pk = m.id)
    AND NOT (m.log_xid IS NOT NULL AND (
      EXISTS (SELECT 1 FROM log_batches b WHERE b.destination_id = $1 AND b.source_id = m.source_id AND ${heldByBatchSql("b", "m")}
                 AND NOT EXISTS (SELECT 1 FROM call_fates f WHERE f.message_pk = m.id AND f.destination_id = $1))
      OR EXISTS (SELECT 1 FROM log_cursors c WHERE c.destination_id = $1 AND c.source_id = m.source_id AND ${unreadByCursorSql("c", "m")})))`;

// ... and none waiting in the queue either. The queue has no message index
// (it would cost every ingested delivery an index entry), so this reads the
// destination's queued deliveries once per statement: fine for the one count
// a backfill starts with, not for every page of it (job-table/backfill.ts
// checks the queue once per page it inserts).
const candidates = `${received}
    AND NOT EXISTS (SELECT 1 FROM delivery_queue q WHERE q.destination_id = $1 AND q.message_pk = m.id)`;

/** How many calls of the range have no delivery at the destination (a backfill's candidates, before its filter). */
export async function countBackfillCandidates(db: Queryable, range: BackfillRange): Promise<number> {
  const result = await db.query<{ n: string }>(`SELECT count(*)::text AS n ${candidates}`, [range.destinationId, range.since, range.until]);
  return Number(result.rows[0]!.n);
}

/**
 * The next page of the range's calls without a finished delivery to the
 * destination, after message `afterPk`, in acceptance order. Some may have
 * a delivery waiting in the queue: enqueueBackfillPage skips those. The
 * bodies are read only when asked for (the destination's rules need them).
 */
export async function selectBackfillCandidates(
  db: Queryable,
  range: BackfillRange,
  afterPk: string,
  limit: number,
  withPayload = true,
): Promise<Array<{ id: string; payload: string | null; received_at: Date }>> {
  const result = await db.query<{ id: string; payload: string | null; received_at: Date }>(
    `SELECT m.id, ${withPayload ? "m.payload" : "NULL AS payload"}, m.received_at ${received} AND m.id > $4 ORDER BY m.id LIMIT $5`,
    [range.destinationId, range.since, range.until, afterPk, limit],
  );
  return result.rows;
}
