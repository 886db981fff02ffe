import { enqueueCte, notifyIfQueued, orderingKeySql } from "../job-table/index.js";
import type { Queryable } from "../pool.js";

export interface QueueNotificationsOptions {
  deletionRequestId: string;
  sourceIds: readonly string[];
  userId: string;
  /** The delete notification body (buildDeletePayload), the same for every source. */
  payload: string;
  at: Date;
}

/**
 * Stores one delete message per affected source that has an enabled
 * destination, one delivery per enabled destination of that source, and
 * links the messages to the deletion request, in one statement. The
 * delivery loop sends them like any message (signed, retried, logged).
 * Every enabled destination is told, whatever integrations earlier calls
 * carried: a deletion concerns all the data a destination may have got.
 * Returns the number of deliveries (notifications) queued.
 */
export async function queueDeleteNotifications(db: Queryable, options: QueueNotificationsOptions): Promise<number> {
  if (options.sourceIds.length === 0) return 0;
  const result = await db.query<{ notifications: string }>(
    `WITH targets AS (
       -- The sources' rows locked (messages have no foreign key): a source's
       -- deletion waits for this statement, then deletes what it stored.
       SELECT ds.source_id, d.id AS destination_id
         FROM destination_sources ds JOIN destinations d ON d.id = ds.destination_id
         JOIN sources s ON s.id = ds.source_id
        WHERE ds.source_id = ANY($1::uuid[]) AND d.enabled
          FOR KEY SHARE OF s
     ), queue_targets AS (
       -- A destination on the call log reads the notification by its cursor.
       SELECT t.* FROM targets t JOIN destinations d ON d.id = t.destination_id WHERE d.delivery_layout = 'per_call'
     ), inserted AS (
       INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
       SELECT s.source_id, gen_random_uuid()::text, 'delete', $2, $3, $4
         FROM (SELECT DISTINCT source_id FROM targets) s
       RETURNING id, source_id
       -- ordering_key: the user being forgotten, so on a destination with
       -- per-user ordering the notification follows their earlier calls.
     ), ${enqueueCte(`SELECT t.destination_id, i.id, i.source_id, $3, $3, ${orderingKeySql("$2::text", "NULL")}
         FROM inserted i JOIN queue_targets t ON t.source_id = i.source_id`)}, linked AS (
       INSERT INTO deletion_request_messages (deletion_request_id, message_pk)
       SELECT $5, id FROM inserted
     )
     SELECT (SELECT count(*) FROM queued) AS notifications,
            ${notifyIfQueued()}`,
    [options.sourceIds, options.userId, options.at, options.payload, options.deletionRequestId],
  );
  return Number(result.rows[0]?.notifications ?? 0);
}
