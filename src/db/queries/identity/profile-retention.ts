import type { Queryable } from "../../pool.js";

/**
 * Retention for profiles' timelines: the links of calls older than every
 * stored call (retention deletes the oldest calls first), a batch at a time;
 * how many went. Profiles keep their identifiers, traits and figures.
 */
export async function purgeProfileCallsOfGoneMessages(db: Queryable, limit: number): Promise<number> {
  const result = await db.query(
    `DELETE FROM profile_calls WHERE (profile_id, message_pk) IN (
       SELECT profile_id, message_pk FROM profile_calls
        WHERE message_pk < coalesce((SELECT min(id) FROM messages), 9223372036854775807) LIMIT $1)`,
    [limit],
  );
  return result.rowCount ?? 0;
}
