import type { Queryable } from "../../pool.js";
import { and, filterPredicates, Params } from "../filter.js";
import type { BulkReplay, ReplayCounts } from "../replay-bulk.js";

/**
 * countReplayable on Citus. A delivery (by destination) and its message
 * (by id) are on different shards, and the deliveries view (a UNION ALL)
 * cannot be joined to messages in one pushed-down query; so the matching
 * deliveries' message keys are materialised first (an intermediate result
 * Citus sends to the workers), then joined to the messages by their
 * distribution key. The messages a messageId or userId names are
 * materialised the same way. An admin read, run once per bulk replay.
 */
export async function countReplayableOnCitus(db: Queryable, filter: BulkReplay["filter"], retentionCutoff: Date): Promise<ReplayCounts> {
  // Read first: deliveries created after it are not part of the replay (nor, then, of its counts' purpose).
  const sequence = await db.query<{ max_id: string | null }>(
    "SELECT (CASE WHEN is_called THEN last_value ELSE last_value - 1 END)::text AS max_id FROM delivery_ids",
  );
  const params = new Params();
  const where = filterPredicates({ ...filter, messageId: undefined, userId: undefined }, params);
  const ctes: string[] = [];
  if (filter.messageId !== undefined || filter.userId !== undefined) {
    const named = ["fm.source_id IN (SELECT id FROM sources)"];
    if (filter.messageId !== undefined) named.push(`fm.message_id = ${params.add(filter.messageId, "text")}`);
    if (filter.userId !== undefined) named.push(`fm.user_id = ${params.add(filter.userId, "text")}`);
    ctes.push(`named AS MATERIALIZED (SELECT fm.id FROM messages fm WHERE ${and(named)})`);
    where.push("d.message_pk IN (SELECT id FROM named)");
  }
  ctes.push(`matching AS MATERIALIZED (SELECT d.message_pk FROM deliveries d WHERE ${and(where)})`);
  const cutoff = params.add(retentionCutoff, "timestamptz");
  const result = await db.query<{ replayable: string; past_retention: string }>(
    `WITH ${ctes.join(", ")}
     SELECT count(*) FILTER (WHERE m.received_at >= ${cutoff}) AS replayable,
            count(*) FILTER (WHERE m.received_at < ${cutoff}) AS past_retention
       FROM matching d JOIN messages m ON m.id = d.message_pk`,
    params.values,
  );
  const row = result.rows[0]!;
  return { replayable: Number(row.replayable), pastRetention: Number(row.past_retention), maxId: sequence.rows[0]?.max_id ?? null };
}
