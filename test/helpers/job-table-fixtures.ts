import { randomUUID } from "node:crypto";
import type { Queryable } from "../../src/db/pool.js";
import { storeMessages } from "../../src/db/queries/store-messages.js";

/**
 * A source and an enabled destination with one webhook, linked, written
 * straight into the tables: the job-table tests' starting point.
 */
export async function seedSourceAndDestination(db: Queryable, at: Date): Promise<{ sourceId: string; destinationId: string }> {
  const sourceId = randomUUID();
  const destinationId = randomUUID();
  await db.query("INSERT INTO sources (id, name, write_key_hash) VALUES ($1, 's', $2)", [sourceId, Buffer.from(sourceId)]);
  await db.query(
    `INSERT INTO destinations (id, name, enabled, webhooks, created_at, updated_at)
     VALUES ($1, 'hook', true, '[{"url":"https://example.com/hook","headers":{}}]', $2, $2)`,
    [destinationId, at],
  );
  await db.query("INSERT INTO destination_sources (source_id, destination_id) VALUES ($1, $2)", [sourceId, destinationId]);
  return { sourceId, destinationId };
}

/** Stores one track call for `sourceId`; returns its messageId and its delivery's id. */
export async function enqueueOne(db: Queryable, sourceId: string, at: Date): Promise<{ id: string; messageId: string }> {
  const messageId = randomUUID();
  await storeMessages(db, sourceId, at, [
    { messageId, type: "track", userId: "u", payload: JSON.stringify({ messageId }), integrations: undefined },
  ]);
  const row = await db.query<{ id: string }>(
    "SELECT d.id FROM deliveries d JOIN messages m ON m.id = d.message_pk WHERE m.message_id = $1",
    [messageId],
  );
  return { id: row.rows[0]!.id, messageId };
}
