import type { Queryable } from "../pool.js";
import { removeMessages } from "../job-table/index.js";

/**
 * Locks and returns the sources a deletion request affects: the given ones
 * (the caller has checked the ids are well-formed) or, for none, every
 * source. FOR KEY SHARE keeps them from being deleted until the request
 * commits (its delete notifications reference them), without blocking
 * anything else. Returns the given ids that do not exist separately.
 */
export async function lockAffectedSources(db: Queryable, sourceIds: readonly string[]): Promise<{ found: string[]; missing: string[] }> {
  if (sourceIds.length === 0) {
    const all = await db.query<{ id: string }>("SELECT id FROM sources ORDER BY created_at, id FOR KEY SHARE");
    return { found: all.rows.map((r) => r.id), missing: [] };
  }
  const result = await db.query<{ id: string }>("SELECT id FROM sources WHERE id = ANY($1::uuid[]) FOR KEY SHARE", [sourceIds]);
  const found = new Set(result.rows.map((r) => r.id));
  return { found: sourceIds.filter((id) => found.has(id)), missing: sourceIds.filter((id) => !found.has(id)) };
}

/**
 * Deletes the user's stored messages in the given sources; their deliveries
 * (undelivered ones and the delivered history), attempts and fates go with
 * them (message-removal.ts), in the caller's transaction. That covers:
 * - every call whose userId is the user (messages_user_idx);
 * - alias calls whose previousId is the user: the alias ties the user's
 *   old identity to the new one. payload is JSON.stringify output, so the
 *   exact key-and-value text finds candidates and jsonb confirms (a nested
 *   "Previous ID" inside context must not match). This part scans the
 *   sources' alias messages: deletion requests are rare.
 * Delete notifications (type 'delete') stay: they are how receivers learn
 * of this and earlier requests, and the requests report on them.
 * Returns the number of messages deleted.
 */
export async function deleteUserMessages(db: Queryable, sourceIds: readonly string[], userId: string): Promise<number> {
  if (sourceIds.length === 0) return 0;
  const result = await db.query<{ id: string }>(
    `SELECT id FROM messages
      WHERE source_id = ANY($1::uuid[]) AND type <> 'delete'
        AND (user_id = $2
             OR (type = 'alias' AND strpos(payload, $3) > 0 AND payload::jsonb ->> 'Previous ID' = $2))`,
    [sourceIds, userId, `"Previous ID":${JSON.stringify(userId)}`],
  );
  return removeMessages(
    db,
    result.rows.map((r) => r.id),
  );
}

/**
 * Forgets the user in every audience and computed trait of the given
 * sources, keeping member counts right. A later sync that still lists the
 * user adds them again (as a new member); one that does not sends nothing
 * for them, since Waypost no longer knows they were there.
 * Returns the number of memberships removed.
 */
export async function deleteUserAudienceState(db: Queryable, sourceIds: readonly string[], userId: string): Promise<number> {
  if (sourceIds.length === 0) return 0;
  const result = await db.query<{ removed: string }>(
    `WITH gone AS (
       DELETE FROM audience_members m USING audiences a
        WHERE a.source_id = ANY($1::uuid[]) AND m.audience_id = a.id AND m.user_id = $2
       RETURNING m.audience_id
     ), counted AS (
       UPDATE audiences a SET member_count = a.member_count - g.n
         FROM (SELECT audience_id, count(*) AS n FROM gone GROUP BY audience_id) g
        WHERE a.id = g.audience_id
     )
     SELECT count(*) AS removed FROM gone`,
    [sourceIds, userId],
  );
  return Number(result.rows[0]?.removed ?? 0);
}
