import { orderingKeySql } from "./enqueue.js";
import { orderingKeysSql } from "./fence.js";
import type { Queryable } from "../pool.js";

/**
 * Gives a destination's queued deliveries their user keys when per-user
 * ordering is turned on, in the transaction that turns it on (after the
 * destination's update): ingest writes keys only for destinations that
 * order, so ordering then applies to deliveries already waiting too.
 *
 * The lock waits for every transaction writing the queue (a store that read
 * the setting before this change) to commit, and holds new ones until this
 * one commits: a store starting after it takes its snapshot after the lock,
 * so it sees the new setting. Delivery ids (acceptance order) are unchanged.
 *
 * Three statements over one table each: on Citus the queue (by destination)
 * and messages (by id) are not colocated and cannot be joined, and the
 * update, filtered by its destination, routes to one shard. Rare admin
 * work, so one form serves both layouts. Returns the deliveries keyed.
 */
export async function keyQueuedDeliveries(db: Queryable, destinationId: string): Promise<number> {
  await db.query("LOCK TABLE delivery_queue IN SHARE ROW EXCLUSIVE MODE");
  const queued = await db.query<{ message_pk: string }>(
    "SELECT DISTINCT message_pk FROM delivery_queue WHERE destination_id = $1 AND ordering_key IS NULL",
    [destinationId],
  );
  if (queued.rows.length === 0) return 0;
  const keys = await db.query<{ id: string; key: string }>(
    `SELECT id, key FROM (SELECT id, ${orderingKeySql("user_id", "payload::json ->> 'anonymousId'")} AS key
                            FROM messages WHERE id = ANY($1::bigint[])) k
      WHERE key IS NOT NULL`,
    [queued.rows.map((r) => r.message_pk)],
  );
  if (keys.rows.length === 0) return 0;
  const result = await db.query(
    orderingKeysSql(
      "k.key",
      "unnest($2::bigint[], $3::text[]) AS k(message_pk, key)",
      "d.destination_id = $1 AND d.ordering_key IS NULL AND d.message_pk = k.message_pk",
    ),
    [destinationId, keys.rows.map((r) => r.id), keys.rows.map((r) => r.key)],
  );
  return result.rowCount ?? 0;
}
