import type { Queryable } from "../pool.js";

export interface StoredCallRow {
  id: string;
  source_id: string;
  message_id: string;
  type: string;
  user_id: string | null;
  received_at: Date;
  /** When the client says it sent the call (null: it did not say). */
  sent_at: Date | null;
  payload: string;
}

const columns = "m.id, m.source_id, m.message_id, m.type, m.user_id, m.received_at, m.sent_at, m.payload";

/** The stored calls with this messageId (one per source that used it; at most `limit`), optionally of one source. */
export async function selectCallsByMessageId(
  db: Queryable,
  messageId: string,
  sourceId: string | undefined,
  limit = 20,
): Promise<StoredCallRow[]> {
  // Per source, through the (source_id, message_id) key: messages has no
  // index on message_id alone (it would cost every insert), and sources are few.
  const result = await db.query<StoredCallRow>(
    `SELECT ${columns} FROM sources s
       CROSS JOIN LATERAL (SELECT * FROM messages m WHERE m.source_id = s.id AND m.message_id = $1) m
      WHERE ($2::uuid IS NULL OR s.id = $2)
      ORDER BY m.source_id LIMIT $3`,
    [messageId, sourceId ?? null, limit],
  );
  return result.rows;
}

/** The most recent calls of these sources (delete notifications left out), newest first. */
export async function selectRecentCalls(db: Queryable, sourceIds: readonly string[], limit: number): Promise<StoredCallRow[]> {
  if (sourceIds.length === 0) return [];
  const result = await db.query<StoredCallRow>(
    `SELECT ${columns} FROM messages m WHERE m.source_id = ANY ($1::uuid[]) AND m.type <> 'delete'
      ORDER BY m.id DESC LIMIT $2`,
    [sourceIds, limit],
  );
  return result.rows;
}

/** The calls of these sources with these messageIds, in the order the ids are given. */
export async function selectCallsByMessageIds(
  db: Queryable,
  sourceIds: readonly string[],
  messageIds: readonly string[],
): Promise<StoredCallRow[]> {
  if (sourceIds.length === 0 || messageIds.length === 0) return [];
  const result = await db.query<StoredCallRow>(
    `SELECT ${columns} FROM unnest($2::text[]) WITH ORDINALITY AS w(message_id, position)
       JOIN messages m ON m.message_id = w.message_id AND m.source_id = ANY ($1::uuid[])
      ORDER BY w.position, m.source_id`,
    [sourceIds, messageIds],
  );
  return result.rows;
}
