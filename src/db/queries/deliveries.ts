import type { DeliveryStatus } from "./complete-deliveries.js";
import type { Queryable } from "./store-messages.js";

export interface DeliveryRow {
  id: string;
  destination_id: string;
  source_id: string;
  message_id: string;
  type: string;
  status: DeliveryStatus;
  attempt_count: number;
  created_at: Date;
  first_attempt_at: Date | null;
  run_at: Date;
  finalized_at: Date | null;
  /** The exact body sent. */
  payload: string;
  user_id: string | null;
}

export interface AttemptRow {
  delivery_id: string;
  attempt: number;
  url_index: number;
  url: string;
  attempted_at: Date;
  outcome: "success" | "retryable" | "permanent" | "abandoned";
  status_code: number | null;
  error: string | null;
  latency_ms: number;
  response_body: string | null;
}

const columns = `d.id, d.destination_id, d.source_id, m.message_id, m.type, d.status, d.attempt_count,
  d.created_at, d.first_attempt_at, d.run_at, d.finalized_at, m.payload, m.user_id`;

export async function selectDelivery(db: Queryable, id: string): Promise<DeliveryRow | undefined> {
  const result = await db.query<DeliveryRow>(
    `SELECT ${columns} FROM deliveries d JOIN messages m ON m.id = d.message_pk WHERE d.id = $1`,
    [id],
  );
  return result.rows[0];
}

export async function selectAttempts(db: Queryable, destinationIds: readonly string[], deliveryIds: readonly string[]): Promise<AttemptRow[]> {
  if (deliveryIds.length === 0) return [];
  const result = await db.query<AttemptRow>(
    `SELECT delivery_id, attempt, url_index, url, attempted_at, outcome, status_code, error, latency_ms, response_body
       FROM delivery_attempts
      WHERE (destination_id, delivery_id) IN (SELECT * FROM unnest($1::uuid[], $2::bigint[]))
      ORDER BY delivery_id, attempt, url_index`,
    [destinationIds, deliveryIds],
  );
  return result.rows;
}

/**
 * Replays a delivery: due now, with a fresh retry window and every URL.
 * Returns false when it is not in a replayable state.
 */
export async function replayDelivery(db: Queryable, destinationId: string, id: string, now: Date): Promise<boolean> {
  const result = await db.query(
    `WITH replayed AS (
       UPDATE deliveries SET ${replayAssignments("$3")}
        WHERE destination_id = $1 AND id = $2 AND status IN ('failed', 'expired', 'retrying')
        RETURNING 1
     )
     SELECT pg_notify('waypost_deliveries', '') FROM replayed`,
    [destinationId, id, now],
  );
  return (result.rowCount ?? 0) > 0;
}

/**
 * A replay's new state: due at `runAt`, every URL, and a fresh retry window
 * (the window runs from the first attempt, which is cleared). The lease
 * token moves on, so an attempt still in flight cannot overwrite it.
 */
export function replayAssignments(runAt: string): string {
  return `status = 'retrying', run_at = ${runAt}, finalized_at = NULL, first_attempt_at = NULL,
          retry_urls = NULL, lease_token = lease_token + 1, lease_owner = NULL, leased_until = NULL`;
}

export interface DestinationStatsRow {
  counts: Partial<Record<DeliveryStatus, string>>;
  attempts: string;
  successes: string;
  mean_latency_ms: number | null;
}

export async function selectDestinationStats(db: Queryable, destinationId: string, since: Date): Promise<DestinationStatsRow> {
  const result = await db.query<DestinationStatsRow>(
    `SELECT (SELECT coalesce(jsonb_object_agg(status, n), '{}') FROM
               (SELECT status, count(*)::text AS n FROM deliveries WHERE destination_id = $1 GROUP BY status) s) AS counts,
            count(*)::text AS attempts,
            count(*) FILTER (WHERE outcome = 'success')::text AS successes,
            avg(latency_ms) FILTER (WHERE outcome <> 'abandoned')::float8 AS mean_latency_ms
       FROM delivery_attempts WHERE destination_id = $1 AND attempted_at >= $2`,
    [destinationId, since],
  );
  return result.rows[0]!;
}
