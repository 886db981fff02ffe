import type { Queryable } from "../../pool.js";
import { and, Params } from "../filter.js";
import type { BulkReplay, ReplayBatch, ReplayPosition } from "../replay-bulk.js";
import { citusFilterPredicates } from "./message-filter.js";
import { replayOnCitus } from "./replay.js";

/**
 * A bulk replay's page on Citus, in three steps, since the deliveries and
 * their messages are on different shards: the page of matching deliveries
 * of the destination (its shard), in creation order as on one Postgres; the
 * retention check on their messages (by id); then the replay of those kept
 * (replay.ts, on the destination's shard). Deliveries past retention count
 * toward the page, so the next page starts after them.
 */
export async function replayBatchOnCitus(
  db: Queryable,
  replay: BulkReplay,
  after: ReplayPosition | undefined,
  now: Date,
  limit: number,
): Promise<ReplayBatch> {
  const params = new Params();
  const where = await citusFilterPredicates(db, replay.filter, params);
  where.push(`d.id <= ${params.add(replay.maxId, "bigint")}`);
  if (after) where.push(`(d.created_at, d.id) > (${params.add(after.createdAt, "timestamptz")}, ${params.add(after.id, "bigint")})`);
  const page = await db.query<{ id: string; created_at: string; message_pk: string }>(
    `SELECT d.id, d.created_at::text AS created_at, d.message_pk FROM deliveries d
      WHERE ${and(where)}
      ORDER BY d.created_at, d.id LIMIT ${params.add(limit, "int")}`,
    params.values,
  );
  const last = page.rows[page.rows.length - 1];
  let replayed = 0;
  if (page.rows.length > 0) {
    const kept = await db.query<{ id: string }>("SELECT id FROM messages WHERE id = ANY ($1::bigint[]) AND received_at >= $2", [
      page.rows.map((row) => row.message_pk),
      replay.retentionCutoff,
    ]);
    const keptMessages = new Set(kept.rows.map((row) => row.id));
    const ids = page.rows.filter((row) => keptMessages.has(row.message_pk)).map((row) => row.id);
    replayed = await replayOnCitus(db, replay.filter.destinationId, ids, now, replay.filter.statuses);
  }
  return {
    replayed,
    next: page.rows.length === limit && last ? { createdAt: last.created_at, id: last.id } : undefined,
  };
}
