import type { Query } from "../job-table/index.js";
import type { Queryable } from "../pool.js";

export interface DestinationFateRow {
  id: string;
  name: string;
  created_at: Date;
  /** Connected to the call's source now. */
  connected: boolean;
  /** Recorded when the call was routed (or its transform dropped it); null: none. */
  fate: "filtered" | "disabled" | "integrations_off" | null;
  reason: string | null;
}

/** Every destination that exists now, with what was recorded for this stored call there. */
export async function selectDestinationFates(db: Queryable, messagePk: string, sourceId: string): Promise<DestinationFateRow[]> {
  const result = await db.query<DestinationFateRow>(
    `SELECT dst.id, dst.name, dst.created_at, f.fate, f.reason,
            EXISTS (SELECT 1 FROM destination_sources ds WHERE ds.destination_id = dst.id AND ds.source_id = $2) AS connected
       FROM destinations dst LEFT JOIN call_fates f ON f.message_pk = $1 AND f.destination_id = dst.id
      ORDER BY dst.name, dst.id`,
    [messagePk, sourceId],
  );
  return result.rows;
}

/** The reasons a call is held back from a destination, as its recorded fate says (filtered, with a reason; disabled; integrations off). */
export type HeldBackReason = "filter" | "consent" | "subscriptions" | "transform" | "disabled" | "integrations_off";

export interface HeldBackCountRow {
  minute: Date;
  reason: HeldBackReason;
  calls: number;
}

/**
 * Calls held back from a destination since `since`, per minute and reason:
 * one index-only range scan per recorded fate (call_fates_search_idx carries
 * the reason). Exported so that tests can EXPLAIN exactly what runs.
 */
export function heldBackPerMinuteQuery(destinationId: string, since: Date): Query {
  return {
    text: `SELECT date_trunc('minute', recorded_at) AS minute, coalesce(reason, fate) AS reason, count(*)::int AS calls FROM call_fates
            WHERE destination_id = $1 AND fate IN ('filtered', 'disabled', 'integrations_off') AND recorded_at >= $2
            GROUP BY 1, 2 ORDER BY 1`,
    values: [destinationId, since],
  };
}

export async function selectHeldBackPerMinute(db: Queryable, destinationId: string, since: Date): Promise<HeldBackCountRow[]> {
  const query = heldBackPerMinuteQuery(destinationId, since);
  return (await db.query<HeldBackCountRow>(query.text, query.values)).rows;
}
