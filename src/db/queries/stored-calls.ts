import type { Queryable } from "../pool.js";

/**
 * The ids of a source's calls received at or after `since`, newest first,
 * at most `limit` of them: what a plan is inferred from. Only the ids, so
 * the bodies can be read a page at a time (selectStoredCallBodiesById).
 */
export async function selectStoredCallIds(db: Queryable, options: { sourceId: string; since: Date; limit: number }): Promise<string[]> {
  const result = await db.query<{ id: string }>(
    `SELECT id FROM messages
      WHERE source_id = $1 AND received_at >= $2 AND type IN ('track', 'identify', 'group', 'page')
      ORDER BY received_at DESC, id DESC LIMIT $3`,
    [options.sourceId, options.since, options.limit],
  );
  return result.rows.map((row) => row.id);
}

/** The stored bodies of these calls (those still there), in no particular order. */
export async function selectStoredCallBodiesById(db: Queryable, ids: readonly string[]): Promise<string[]> {
  const result = await db.query<{ payload: string }>("SELECT payload FROM messages WHERE id = ANY($1::bigint[])", [ids]);
  return result.rows.map((row) => row.payload);
}
