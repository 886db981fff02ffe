import type { Queryable } from "../../pool.js";
import { fateSearchValues, type FatedCallRow, type FateSearch } from "../../queries/fate-search.js";

/**
 * searchFates on Citus. call_fates is distributed by message, so a
 * destination's fates are on every shard: one statement runs on each, with
 * its messages beside it (colocated by message key), each shard returning
 * its newest `limit`, merged by Citus. (The single-node form's LATERAL with
 * a LIMIT per fate cannot be pushed down to the shards.)
 */
export async function searchFatesOnCitus(db: Queryable, search: FateSearch): Promise<FatedCallRow[]> {
  const result = await db.query<FatedCallRow>(
    `SELECT m.id AS message_pk, m.source_id, m.message_id, m.type, m.user_id, m.received_at,
            CASE WHEN m.type = 'track' THEN m.payload::json ->> 'event' END AS event,
            f.fate, f.reason, f.recorded_at, f.recorded_at::text AS cursor_at
       FROM call_fates f JOIN messages m ON m.id = f.message_pk
      WHERE f.destination_id = $1 AND f.fate = ANY($2::text[])
        AND ($3::text IS NULL OR f.reason = $3)
        AND f.recorded_at >= $4::timestamptz AND f.recorded_at < $5::timestamptz
        AND (f.recorded_at, f.message_pk) < ($6::timestamptz, $7::bigint)
      ORDER BY f.recorded_at DESC, f.message_pk DESC
      LIMIT $8`,
    fateSearchValues(search),
  );
  return result.rows;
}
