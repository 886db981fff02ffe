import type { Queryable } from "../pool.js";
import type { JobTableLayout } from "../citus/layout.js";
import { fateSearchValues, searchFatesOnCitus } from "./citus/fate-search.js";
import type { FatedCallRow, FateSearch } from "./fate-search-types.js";

/**
 * A destination's recorded fates, newest first. Each fate is read through
 * call_fates_search_idx in (recorded_at, message_pk) order, at most `limit`
 * rows of it, and the few fates are merged: no sort of all matching rows.
 */
export async function searchFates(db: Queryable, search: FateSearch, layout: JobTableLayout = "postgres"): Promise<FatedCallRow[]> {
  if (layout === "citus") return searchFatesOnCitus(db, search);
  const result = await db.query<FatedCallRow>(
    `SELECT m.id AS message_pk, m.source_id, m.message_id, m.type, m.user_id, m.received_at,
            CASE WHEN m.type = 'track' THEN m.payload::json ->> 'event' END AS event,
            f.fate, f.reason, f.recorded_at, f.recorded_at::text AS cursor_at
       FROM unnest($2::text[]) AS k(fate)
       CROSS JOIN LATERAL (
         SELECT * FROM call_fates f
          WHERE f.destination_id = $1 AND f.fate = k.fate
            AND ($3::text IS NULL OR f.reason = $3)
            AND f.recorded_at >= $4::timestamptz AND f.recorded_at < $5::timestamptz
            AND (f.recorded_at, f.message_pk) < ($6::timestamptz, $7::bigint)
          ORDER BY f.recorded_at DESC, f.message_pk DESC
          LIMIT $8
       ) f
       JOIN messages m ON m.id = f.message_pk
      ORDER BY f.recorded_at DESC, f.message_pk DESC
      LIMIT $8`,
    fateSearchValues(search),
  );
  return result.rows;
}
