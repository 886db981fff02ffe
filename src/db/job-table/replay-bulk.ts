import type { Queryable } from "../pool.js";
import { reopenCtes, transitionSql } from "./fence.js";
import { and, filterPredicates, Params, type DeliveryFilter, type Query } from "./filter.js";
import { notifyWhen } from "./notify.js";
import { replaySet, replayStatus } from "./replay.js";

/** A bulk replay: the filter (with a destination and statuses) and the bounds fixed when it was asked for. */
export interface BulkReplay {
  filter: DeliveryFilter & { destinationId: string; statuses: readonly ("failed" | "expired" | "retrying")[] };
  /** Messages received before this are past retention: not replayed. */
  retentionCutoff: Date;
  /** The newest delivery id when the replay was asked for: later deliveries are not part of it. */
  maxId: string;
}

export interface ReplayCounts {
  replayable: number;
  /** Matching, but their messages are past the retention period. */
  pastRetention: number;
  maxId: string | null;
}

/** The count as SQL (exported so that tests can EXPLAIN exactly what runs). */
export function countReplayableQuery(filter: BulkReplay["filter"], retentionCutoff: Date): Query {
  const params = new Params();
  const where = filterPredicates(filter, params);
  const cutoff = params.add(retentionCutoff, "timestamptz");
  return {
    text: `SELECT count(*) FILTER (WHERE m.received_at >= ${cutoff}) AS replayable,
                  count(*) FILTER (WHERE m.received_at < ${cutoff}) AS past_retention,
                  (SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM delivery_ids)::text AS max_id
             FROM deliveries d JOIN messages m ON m.id = d.message_pk
            WHERE ${and(where)}`,
    values: params.values,
  };
}

/** Counts what a bulk replay would replay, and fixes its upper bound. */
export async function countReplayable(db: Queryable, filter: BulkReplay["filter"], retentionCutoff: Date): Promise<ReplayCounts> {
  const query = countReplayableQuery(filter, retentionCutoff);
  const result = await db.query<{ replayable: string; past_retention: string; max_id: string | null }>(query.text, query.values);
  const row = result.rows[0]!;
  return { replayable: Number(row.replayable), pastRetention: Number(row.past_retention), maxId: row.max_id };
}

/** A bulk replay's place in the destination's creation order. */
export interface ReplayPosition {
  createdAt: string;
  id: string;
}

export interface ReplayBatch {
  replayed: number;
  /** Where the next batch starts; undefined when this was the last. */
  next: ReplayPosition | undefined;
}

/**
 * Replays the next `limit` matching deliveries after `after`, in creation
 * order: that of deliveries_destination_created_idx, so a whole replay reads
 * the destination's rows in the time range once, never the table's (an
 * order by id alone would let Postgres walk the id index of every
 * destination). One statement, which also wakes the delivery loops. Each
 * gets a fresh retry window (its first attempt is cleared), as a single
 * replay does, and the lease is revoked, so a result of an attempt still in
 * flight is dropped. A delivery whose state changed meanwhile (delivered by
 * that attempt, say) is re-checked by the UPDATE and left alone.
 */
export async function replayBatch(
  db: Queryable,
  replay: BulkReplay,
  after: ReplayPosition | undefined,
  now: Date,
  limit: number,
): Promise<ReplayBatch> {
  const query = replayBatchQuery(replay, after, now, limit);
  const result = await db.query<{ replayed: string; last_at: string | null; last_id: string | null; size: string }>(
    query.text,
    query.values,
  );
  const row = result.rows[0]!;
  const full = Number(row.size) === limit;
  return {
    replayed: Number(row.replayed),
    next: full && row.last_at && row.last_id ? { createdAt: row.last_at, id: row.last_id } : undefined,
  };
}

export function replayBatchQuery(replay: BulkReplay, after: ReplayPosition | undefined, now: Date, limit: number): Query {
  const params = new Params();
  const where = filterPredicates(replay.filter, params);
  where.push(`m.received_at >= ${params.add(replay.retentionCutoff, "timestamptz")}`);
  where.push(`d.id <= ${params.add(replay.maxId, "bigint")}`);
  if (after) where.push(`(d.created_at, d.id) > (${params.add(after.createdAt, "timestamptz")}, ${params.add(after.id, "bigint")})`);
  const statuses = params.add(replay.filter.statuses, "delivery_status[]");
  const runAt = params.add(now, "timestamptz");
  return {
    text: `WITH batch AS (
       SELECT d.destination_id, d.id, d.created_at FROM deliveries d JOIN messages m ON m.id = d.message_pk
        WHERE ${and(where)}
        ORDER BY d.created_at, d.id LIMIT ${params.add(limit, "int")}
     ), waiting AS (
       ${transitionSql({
         fence: { kind: "revoke" },
         status: replayStatus,
         set: replaySet(runAt),
         from: "batch b",
         where: `d.id = ANY (ARRAY(SELECT id FROM batch)) AND d.destination_id = b.destination_id AND d.id = b.id
          AND d.status = 'retrying' AND 'retrying' = ANY(${statuses})`,
         returning: "1",
       })}
     ), ${reopenCtes("reopened", {
       using: "batch b",
       // id = ANY(ARRAY(...)) keeps it on index lookups; the join alone lets
       // the planner hash the whole history.
       where: `h.id = ANY (ARRAY(SELECT id FROM batch)) AND h.destination_id = b.destination_id AND h.id = b.id
          AND h.status IN ('failed', 'expired') AND h.status = ANY(${statuses})`,
       runAt,
     })}, replayed AS (
       SELECT 1 FROM waiting UNION ALL SELECT 1 FROM reopened
     ), last AS (
       SELECT created_at, id FROM batch ORDER BY created_at DESC, id DESC LIMIT 1
     )
     SELECT (SELECT count(*) FROM replayed) AS replayed,
            (SELECT count(*) FROM batch) AS size,
            (SELECT created_at::text FROM last) AS last_at,
            (SELECT id::text FROM last) AS last_id,
            ${notifyWhen("EXISTS (SELECT 1 FROM replayed)")}`,
    values: params.values,
  };
}
