import type { Queryable } from "../pool.js";

/**
 * The stored bodies of a source's calls received at or after `since`,
 * newest first, at most `limit` of them: what a plan is inferred from.
 */
export async function selectStoredCallBodies(db: Queryable, options: { sourceId: string; since: Date; limit: number }): Promise<string[]> {
  const result = await db.query<{ payload: string }>(
    `SELECT payload FROM messages
      WHERE source_id = $1 AND received_at >= $2 AND type IN ('track', 'identify', 'group', 'page')
      ORDER BY received_at DESC LIMIT $3`,
    [options.sourceId, options.since, options.limit],
  );
  return result.rows.map((row) => row.payload);
}
