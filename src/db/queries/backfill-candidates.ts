import type { Queryable } from "../pool.js";

export interface BackfillRange {
  destinationId: string;
  since: Date;
  until: Date;
}

// Calls of the destination's sources received in the range (delete
// notifications left out) that it has no delivery for.
const candidates = `FROM messages m
  WHERE m.source_id IN (SELECT ds.source_id FROM destination_sources ds WHERE ds.destination_id = $1)
    AND m.received_at >= $2 AND m.received_at < $3 AND m.type <> 'delete'
    AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.destination_id = $1 AND d.message_pk = m.id)`;

/** How many calls a backfill of this range would consider. */
export async function countBackfillCandidates(db: Queryable, range: BackfillRange): Promise<number> {
  const result = await db.query<{ n: string }>(`SELECT count(*)::text AS n ${candidates}`, [range.destinationId, range.since, range.until]);
  return Number(result.rows[0]!.n);
}

/** The next page of candidates after message `afterPk`, in acceptance order. */
export async function selectBackfillCandidates(
  db: Queryable,
  range: BackfillRange,
  afterPk: string,
  limit: number,
): Promise<Array<{ id: string; payload: string }>> {
  const result = await db.query<{ id: string; payload: string }>(
    `SELECT m.id, m.payload ${candidates} AND m.id > $4 ORDER BY m.id LIMIT $5`,
    [range.destinationId, range.since, range.until, afterPk, limit],
  );
  return result.rows;
}
