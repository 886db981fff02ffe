import { randomUUID } from "node:crypto";
import { inTransaction, type Queryable } from "../../src/db/pool.js";
import { removeMessages } from "../../src/db/job-table/message-removal.js";
import { storeMessages } from "../../src/db/job-table/store-messages.js";

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
  await db.query("INSERT INTO destination_rate_buckets (destination_id, tokens, refilled_at) VALUES ($1, 0, $2)", [destinationId, at]);
  await db.query("INSERT INTO destination_sources (source_id, destination_id) VALUES ($1, $2)", [sourceId, destinationId]);
  return { sourceId, destinationId };
}

/**
 * Deletes the messages `where` picks (all by default) as Waypost does:
 * with their deliveries, attempts and fates (message-removal.ts), in one
 * transaction. Returns how many went.
 */
export async function deleteMessages(db: Queryable, where = "true", params: unknown[] = []): Promise<number> {
  return inTransaction(db, async (tx) => {
    const ids = await tx.query<{ id: string }>(`SELECT id FROM messages WHERE ${where}`, params);
    return removeMessages(
      tx,
      ids.rows.map((r) => r.id),
    );
  });
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

/**
 * Moves queued deliveries into the history by hand, as a final `status` at
 * the database's now (bypassing the lease fence, so the test controls which
 * transaction finishes them). Returns how many moved.
 */
export async function finishByHand(db: Queryable, destinationId: string, ids: readonly string[], status: string): Promise<number> {
  const result = await db.query(
    `WITH q AS (DELETE FROM delivery_queue WHERE destination_id = $1 AND id = ANY($2::bigint[]) RETURNING *)
     INSERT INTO delivery_history (destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count, lease_token)
     SELECT destination_id, id, message_pk, source_id, $3::delivery_status, created_at, now(), attempt_count, lease_token + 1 FROM q`,
    [destinationId, ids, status],
  );
  return result.rowCount ?? 0;
}

/** Puts finished deliveries back in the queue by hand, as retrying and due now. */
export async function reopenByHand(db: Queryable, destinationId: string, ids: readonly string[]): Promise<number> {
  const result = await db.query(
    `WITH h AS (DELETE FROM delivery_history WHERE destination_id = $1 AND id = ANY($2::bigint[]) RETURNING *)
     INSERT INTO delivery_queue (destination_id, id, message_pk, source_id, status, run_at, created_at, attempt_count, lease_token)
     SELECT destination_id, id, message_pk, source_id, 'retrying', now(), created_at, attempt_count, lease_token + 1 FROM h`,
    [destinationId, ids],
  );
  return result.rowCount ?? 0;
}
