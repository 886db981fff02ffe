import type { Queryable } from "../../pool.js";
import { orderingKeySql } from "../enqueue.js";
import { reopenCtes, transitionSql } from "../fence.js";
import { notifyWhen } from "../notify.js";
import { replaySet, replayStatus } from "../replay.js";

// $1 destination, $2 the deliveries' ids, $3 now, $4 the statuses replayed,
// $5/$6 the user keys of finished deliveries' messages (readOrderingKeys).
// Every reference names the one destination: Citus runs it on its shard.
const replayOnShard = `WITH waiting AS (
       ${transitionSql({
         fence: { kind: "revoke" },
         status: replayStatus,
         set: replaySet("$3::timestamptz"),
         where:
           "d.destination_id = $1 AND d.id = ANY ($2::bigint[]) AND d.status = 'retrying' AND 'retrying' = ANY ($4::delivery_status[])",
         returning: "1",
       })}
     ), ${reopenCtes("reopened", {
       using: "(SELECT 1) one",
       where:
         "h.destination_id = $1 AND h.id = ANY ($2::bigint[]) AND h.status IN ('failed', 'expired') AND h.status = ANY ($4::delivery_status[])",
       runAt: "$3::timestamptz",
       orderingKeysFrom: "unnest($5::bigint[], $6::text[]) AS k(pk, key)",
     })}, replayed AS (
       SELECT 1 FROM waiting UNION ALL SELECT 1 FROM reopened
     )
     SELECT (SELECT count(*)::int FROM replayed) AS replayed, ${notifyWhen("EXISTS (SELECT 1 FROM replayed)")}`;

/**
 * Replays deliveries of one destination on Citus (a single replay, or a
 * bulk replay's page): waiting ones in the queue, finished ones back from
 * the history, as on one Postgres. A finished delivery of a destination
 * that orders per user, finished while it did not, takes its message's user
 * key: the messages live on other shards, so those keys are read first.
 * Returns how many were replayed.
 */
export async function replayOnCitus(
  db: Queryable,
  destinationId: string,
  ids: readonly string[],
  now: Date,
  statuses: readonly string[],
): Promise<number> {
  if (ids.length === 0) return 0;
  const keys = await readOrderingKeys(db, destinationId, ids);
  const result = await db.query<{ replayed: number }>(replayOnShard, [
    destinationId,
    ids,
    now,
    statuses,
    [...keys.keys()],
    [...keys.values()],
  ]);
  return result.rows[0]?.replayed ?? 0;
}

/** The user keys of the messages of finished deliveries that have none, when the destination orders per user. */
async function readOrderingKeys(db: Queryable, destinationId: string, ids: readonly string[]): Promise<Map<string, string | null>> {
  const unkeyed = await db.query<{ message_pk: string }>(
    `SELECT h.message_pk FROM delivery_history h
      WHERE h.destination_id = $1 AND h.id = ANY ($2::bigint[]) AND h.ordering_key IS NULL
        AND EXISTS (SELECT 1 FROM destinations o WHERE o.id = $1 AND o.ordering = 'per_user')`,
    [destinationId, ids],
  );
  if (unkeyed.rows.length === 0) return new Map();
  const keys = await db.query<{ id: string; key: string | null }>(
    `SELECT id, ${orderingKeySql("user_id", "payload::json ->> 'anonymousId'")} AS key FROM messages WHERE id = ANY ($1::bigint[])`,
    [unkeyed.rows.map((row) => row.message_pk)],
  );
  return new Map(keys.rows.map((row) => [row.id, row.key]));
}

/** A single replay on Citus, as replayDelivery: true when the delivery was replayable. */
export async function replayDeliveryOnCitus(db: Queryable, destinationId: string, id: string, now: Date): Promise<boolean> {
  return (await replayOnCitus(db, destinationId, [id], now, ["retrying", "failed", "expired"])) > 0;
}
