import type { DeliveryStatus } from "../job-table/delivery-completion.js";
import type { Queryable } from "../pool.js";
import { attemptsReader, attemptsSinceSql } from "./attempts-of.js";
import type { DeliveryRow } from "./delivery-rows.js";

export interface AttemptRow {
  delivery_id: string;
  attempt: number;
  url: string;
  attempted_at: Date;
  outcome: "success" | "retryable" | "permanent" | "abandoned";
  status_code: number | null;
  error: string | null;
  latency_ms: number;
  response_body: string | null;
  destination_revision: number | null;
  discarded_values: number | null;
  /** An integration: the subscription whose action made the request (null for other kinds). */
  subscription: string | null;
  /** An integration: the request's method (null: no request was made). */
  method: string | null;
  /** The request as sent, when the attempt kept it (secrets masked, the body cut at its bound); null otherwise. */
  request_headers: Record<string, string> | null;
  request_body: string | null;
  request_body_bytes: number | null;
  /** The batch operation the attempt was part of, and how many calls it carried (null: an attempt of its own). */
  batch_id: string | null;
  batch_calls: number | null;
  /** The deliveries the batch operation carried (this one among them), as recorded; null: an attempt of its own, or not recorded. */
  batch_delivery_ids: string[] | null;
  /**
   * A row the call log wrote: the calls it carried (their messages' ids, the first 101), which have no delivery id
   * until named (log-deliveries.ts selectCallDeliveryIds); null otherwise.
   */
  call_pks: string[] | null;
}

const columns = `d.id, d.destination_id, d.source_id, m.message_id, m.type, d.status, d.attempt_count,
  d.created_at, coalesce(d.earliest_attempt_at, d.first_attempt_at) AS first_attempt_at, d.run_at, d.finalized_at, m.payload, m.user_id,
  (SELECT a.sent_body FROM delivery_attempts a WHERE a.destination_id = d.destination_id AND a.delivery_id = d.id
    ORDER BY a.attempt DESC, a.url_index LIMIT 1) AS sent_body`;

/** One delivery with its message and the body its last attempt sent (the single-node form of the driver's read). */
export async function selectDelivery(db: Queryable, id: string): Promise<DeliveryRow | undefined> {
  const result = await db.query<DeliveryRow>(`SELECT ${columns} FROM deliveries d JOIN messages m ON m.id = d.message_pk WHERE d.id = $1`, [
    id,
  ]);
  return result.rows[0];
}

/** The deliveries' attempts, their own and their batches', in order. */
export const selectAttempts = attemptsReader<AttemptRow>(
  (attempts) => `SELECT delivery_id, attempt, url, attempted_at, outcome, status_code, error, latency_ms, response_body,
          destination_revision, discarded_values, subscription, method, request_headers, request_body, request_body_bytes,
          batch_id, batch_calls, batch_delivery_ids, call_pks
     FROM ${attempts} a
    ORDER BY delivery_id, attempt, url_index, position`,
);

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
       FROM (${attemptsSinceSql("$1", "$2")}) a`,
    [destinationId, since],
  );
  return result.rows[0]!;
}
