import { profileCallsSql } from "../job-table/filter.js";
import type { Queryable } from "../pool.js";

/** A fate recorded when a call was routed (call_fates.fate). */
export type RecordedFate = "filtered" | "disabled" | "integrations_off";

export interface FateSearch {
  destinationId: string;
  fates: readonly RecordedFate[];
  /** With "filtered": "filter", "consent", "subscriptions" or "transform"; undefined: any. */
  reason?: string | undefined;
  since?: Date | undefined;
  until?: Date | undefined;
  /** Rows strictly older than this (recorded_at as Postgres prints it, and message_pk). */
  before?: { recordedAt: string; messagePk: string } | undefined;
  /** Only the calls of this live profile and the profiles merged into it (one Postgres: identity resolution is off on Citus). */
  profileId?: string | undefined;
  limit: number;
}

export interface FatedCallRow {
  message_pk: string;
  source_id: string;
  message_id: string;
  type: string;
  user_id: string | null;
  received_at: Date;
  /** A track call's event name; null for other types. */
  event: string | null;
  fate: RecordedFate;
  reason: string | null;
  recorded_at: Date;
  /** recorded_at as Postgres prints it, microseconds kept (the page cursor). */
  cursor_at: string;
}

/**
 * A destination's recorded fates, newest first. Each fate is read through
 * call_fates_search_idx in (recorded_at, message_pk) order, at most `limit`
 * rows of it, and the few fates are merged: no sort of all matching rows.
 */
export async function searchFates(db: Queryable, search: FateSearch): Promise<FatedCallRow[]> {
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
            AND ($9::uuid IS NULL OR f.message_pk IN (${profileCallsSql("$9::uuid")}))
          ORDER BY f.recorded_at DESC, f.message_pk DESC
          LIMIT $8
       ) f
       JOIN messages m ON m.id = f.message_pk
      ORDER BY f.recorded_at DESC, f.message_pk DESC
      LIMIT $8`,
    [...fateSearchValues(search), search.profileId ?? null],
  );
  return result.rows;
}

/** The search's parameters, $1 to $8, as both drivers' statements take them. */
export function fateSearchValues(search: FateSearch): unknown[] {
  return [
    search.destinationId,
    search.fates,
    search.reason ?? null,
    // Bounds rather than NULL for "none", so that each is an index condition.
    search.since ?? "-infinity",
    search.until ?? "infinity",
    search.before?.recordedAt ?? "infinity",
    search.before?.messagePk ?? "9223372036854775807",
    search.limit,
  ];
}
