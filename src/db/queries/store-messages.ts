import type pg from "pg";

/** A message ready to store: payload built, destinations chosen. */
export interface MessageToStore {
  messageId: string;
  type: string;
  userId: string;
  payload: string;
  destinationIds: string[];
}

export type Queryable = Pick<pg.Pool, "query"> | pg.PoolClient;

export const deliveriesChannel = "waypost_deliveries";

/**
 * Stores messages and their deliveries in one statement (so atomically),
 * skipping messageIds the source already has, and wakes the delivery loops.
 * Returns the messageIds that were new. Callers pass unique messageIds.
 */
export async function storeMessages(
  db: Queryable,
  sourceId: string,
  receivedAt: Date,
  messages: readonly MessageToStore[],
): Promise<Set<string>> {
  if (messages.length === 0) return new Set();
  const routedMessageIds: string[] = [];
  const routedDestinationIds: string[] = [];
  for (const message of messages) {
    for (const destinationId of message.destinationIds) {
      routedMessageIds.push(message.messageId);
      routedDestinationIds.push(destinationId);
    }
  }
  const result = await db.query<{ stored: string[] | null }>(
    `WITH inserted AS (
       INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
       SELECT $1, i.message_id, i.type, nullif(i.user_id, ''), $2, i.payload
         FROM unnest($3::text[], $4::text[], $5::text[], $6::text[]) AS i(message_id, type, user_id, payload)
       ON CONFLICT (source_id, message_id) DO NOTHING
       RETURNING id, message_id
     ), queued AS (
       INSERT INTO deliveries (destination_id, message_pk, source_id, run_at, created_at)
       SELECT r.destination_id, m.id, $1, $2, $2
         FROM unnest($7::text[], $8::uuid[]) AS r(message_id, destination_id)
         JOIN inserted m USING (message_id)
       RETURNING 1
     )
     SELECT (SELECT array_agg(message_id) FROM inserted) AS stored,
            CASE WHEN EXISTS (SELECT 1 FROM queued) THEN pg_notify('${deliveriesChannel}', '') END AS notified`,
    [
      sourceId,
      receivedAt,
      messages.map((m) => m.messageId),
      messages.map((m) => m.type),
      messages.map((m) => m.userId),
      messages.map((m) => m.payload),
      routedMessageIds,
      routedDestinationIds,
    ],
  );
  return new Set(result.rows[0]?.stored ?? []);
}
