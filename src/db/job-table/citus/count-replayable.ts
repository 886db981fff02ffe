import type { Queryable } from "../../pool.js";
import { and, Params } from "../filter.js";
import type { BulkReplay, ReplayCounts } from "../replay-bulk.js";
import { citusFilterPredicates } from "./message-filter.js";

/** How many deliveries to read at once. */
const chunk = 10_000;

/**
 * What a bulk replay would replay, as countReplayable on one Postgres. On
 * Citus the deliveries (the destination's shard) and their messages
 * (distributed by id) are joined in steps: the matching deliveries' message
 * ids a chunk at a time, then how many of those messages are within
 * retention. The upper bound is the delivery id sequence's, on the
 * coordinator.
 */
export async function countReplayableOnCitus(db: Queryable, filter: BulkReplay["filter"], retentionCutoff: Date): Promise<ReplayCounts> {
  const max = await db.query<{ max_id: string | null }>(
    "SELECT (CASE WHEN is_called THEN last_value ELSE last_value - 1 END)::text AS max_id FROM delivery_ids",
  );
  let replayable = 0;
  let pastRetention = 0;
  let after = "0";
  for (;;) {
    const params = new Params();
    const where = await citusFilterPredicates(db, filter, params);
    where.push(`d.id > ${params.add(after, "bigint")}`);
    const rows = await db.query<{ id: string; message_pk: string }>(
      `SELECT d.id, d.message_pk FROM deliveries d WHERE ${and(where)} ORDER BY d.id LIMIT ${params.add(chunk, "int")}`,
      params.values,
    );
    if (rows.rows.length === 0) break;
    const counted = await db.query<{ kept: number; past: number }>(
      `SELECT count(*) FILTER (WHERE m.received_at >= $2)::int AS kept, count(*) FILTER (WHERE m.received_at < $2)::int AS past
         FROM messages m JOIN unnest($1::bigint[]) AS d(message_pk) ON m.id = d.message_pk`,
      [rows.rows.map((row) => row.message_pk), retentionCutoff],
    );
    replayable += counted.rows[0]?.kept ?? 0;
    pastRetention += counted.rows[0]?.past ?? 0;
    if (rows.rows.length < chunk) break;
    after = rows.rows[rows.rows.length - 1]!.id;
  }
  return { replayable, pastRetention, maxId: max.rows[0]?.max_id ?? null };
}
