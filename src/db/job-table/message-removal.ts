import type { Queryable } from "../pool.js";
import { removalSql } from "./fence.js";

/**
 * Deletes these messages (by id) and everything hanging off them: their
 * deliveries, queued and finished (with their references to batch
 * attempts, which live in the delivery rows), those deliveries' attempts,
 * the calls' fates, the bodies they were sent as at destinations on the
 * call log and, on Citus, their de-duplication keys. Returns the
 * number of messages deleted.
 *
 * This was a statement trigger on messages; Citus runs no triggers on
 * distributed tables, so every place that deletes messages calls this
 * instead, inside its own transaction (the caller's `db` must be in one,
 * or the removal is not atomic). Every statement is a plain `= ANY($1)`
 * over one table: no join between tables Citus keeps apart (messages by
 * id, deliveries by destination), so each runs on every shard in parallel
 * there and as one index or sequential scan on a single Postgres, the same
 * scans the trigger made: the queue has no index on message_pk (it would
 * cost every delivery queued) and is read whole, as the trigger's join
 * read it; the history is probed by its message_pk index and the attempts
 * by their primary key, partition by partition.
 */
export async function removeMessages(db: Queryable, messagePks: readonly string[]): Promise<number> {
  if (messagePks.length === 0) return 0;
  const queued = await db.query<RemovedDelivery>(removalSql("delivery_queue", "d.message_pk = ANY($1::bigint[])"), [messagePks]);
  const finished = await db.query<RemovedDelivery>(removalSql("delivery_history", "d.message_pk = ANY($1::bigint[])"), [messagePks]);
  const deliveries = [...queued.rows, ...finished.rows];
  if (deliveries.length > 0) {
    // By (destination, delivery) pairs: one probe of the attempts' primary
    // key per delivery and partition, as the trigger's join made (two
    // `= ANY` lists would probe every destination with every id).
    await db.query(
      `DELETE FROM delivery_attempts a USING unnest($1::uuid[], $2::bigint[]) AS d(destination_id, id)
        WHERE a.destination_id = d.destination_id AND a.delivery_id = d.id`,
      [deliveries.map((d) => d.destination_id), deliveries.map((d) => d.id)],
    );
    await forgetBatchBodies(db, deliveries);
  }
  // A foreign key's cascade on one Postgres; none on Citus (call_fates sits beside messages there, by message_pk).
  await db.query("DELETE FROM call_fates WHERE message_pk = ANY($1::bigint[])", [messagePks]);
  const gone = await db.query<{ message_id: string }>("DELETE FROM messages WHERE id = ANY($1::bigint[]) RETURNING message_id", [
    messagePks,
  ]);
  if (gone.rows.length === 0) return 0;
  if (await hasMessageKeys(db)) {
    // Citus de-duplicates by message_keys (distributed by message_id): the
    // message ids pick the shards, the message pks the rows.
    await db.query("DELETE FROM message_keys WHERE message_id = ANY($1::text[]) AND message_pk = ANY($2::bigint[])", [
      [...new Set(gone.rows.map((r) => r.message_id))],
      messagePks,
    ]);
  } else {
    // The bodies the calls were sent as at destinations on the call log, which is one Postgres's only (never Citus's):
    // what a per-call delivery's attempt rows held.
    await db.query("DELETE FROM log_sent_bodies WHERE message_pk = ANY($1::bigint[])", [messagePks]);
  }
  return gone.rowCount ?? 0;
}

/** A delivery as its removal returns it. */
interface RemovedDelivery {
  destination_id: string;
  id: string;
  batch_attempts: string[] | null;
  created_at: Date;
}

/**
 * A batch operation's request body carries the calls of every delivery it
 * went with: the removed deliveries' calls leave with the body of each
 * batch attempt they were part of (the row stays, for the other calls'
 * attempts and the stats; its headers, URL and outcome hold no call's data).
 */
async function forgetBatchBodies(db: Queryable, deliveries: readonly RemovedDelivery[]): Promise<void> {
  const refs = deliveries.flatMap((d) =>
    (d.batch_attempts ?? []).map((id) => ({ destination: d.destination_id, id, since: d.created_at })),
  );
  if (refs.length === 0) return;
  await db.query(
    `UPDATE delivery_batch_attempts b SET request_body = NULL
       FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[]) AS r(destination_id, id, since)
      WHERE b.destination_id = r.destination_id AND b.id = r.id AND b.attempted_at >= r.since AND b.request_body IS NOT NULL`,
    [refs.map((r) => r.destination), refs.map((r) => r.id), refs.map((r) => r.since)],
  );
}

/** Whether this database de-duplicates by message_keys (the Citus layout has the table; one Postgres does not). */
async function hasMessageKeys(db: Queryable): Promise<boolean> {
  const result = await db.query<{ present: boolean }>("SELECT to_regclass('message_keys') IS NOT NULL AS present");
  return result.rows[0]?.present === true;
}

/**
 * Deletes a source's messages with everything hanging off them (see
 * removeMessages), a page at a time so a large source never holds all its
 * ids in memory; in the caller's transaction, which sees its own deletes, so
 * the loop ends. Each page is a statement of its own: under READ COMMITTED
 * it sees the messages of a store that held the source's lock until it
 * committed. Returns the number of messages deleted.
 */
export async function removeSourceMessages(db: Queryable, sourceId: string, pageSize = 10_000): Promise<number> {
  let removed = 0;
  for (;;) {
    const page = await db.query<{ id: string }>("SELECT id FROM messages WHERE source_id = $1 LIMIT $2", [sourceId, pageSize]);
    if (page.rows.length === 0) return removed;
    removed += await removeMessages(
      db,
      page.rows.map((r) => r.id),
    );
  }
}
