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

export interface FilteredCountRow {
  minute: Date;
  filtered: number;
}

/** Calls a destination filtered (filter, consent, subscriptions or transform) since `since`, per minute. */
export async function selectFilteredPerMinute(db: Queryable, destinationId: string, since: Date): Promise<FilteredCountRow[]> {
  const result = await db.query<FilteredCountRow>(
    `SELECT date_trunc('minute', recorded_at) AS minute, count(*)::int AS filtered FROM call_fates
      WHERE destination_id = $1 AND recorded_at >= $2 AND fate = 'filtered'
      GROUP BY 1 ORDER BY 1`,
    [destinationId, since],
  );
  return result.rows;
}
