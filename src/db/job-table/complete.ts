import type { AttemptResult } from "../../delivery/send.js";
import type { Queryable } from "../pool.js";
import { transitionSql } from "./fence.js";

export type DeliveryStatus = "pending" | "retrying" | "delivered" | "failed" | "expired" | "cancelled";

/** What one processed delivery turned into. */
export interface DeliveryCompletion {
  destinationId: string;
  id: string;
  /** The claim's token: a completion from a lost lease changes nothing. */
  leaseToken: number;
  status: DeliveryStatus;
  /** Next attempt, for retrying; otherwise ignored. */
  runAt: Date;
  /** True when an attempt was made (false: released untouched). */
  attempted: boolean;
  attemptedAt: Date;
  retryUrls: string[] | null;
  attempts: AttemptResult[];
  /** The delivery was claimed as an open circuit's probe (endpoint health reads it). */
  probe?: boolean;
}

const terminal = new Set<DeliveryStatus>(["delivered", "failed", "expired", "cancelled"]);

// The lease holder's results: applied only while its token still holds.
const completeTransition = transitionSql({
  fence: { kind: "held", token: "c.lease_token" },
  set: `status = c.status,
              run_at = c.run_at,
              finalized_at = c.finalized_at,
              attempt_count = d.attempt_count + CASE WHEN c.attempted THEN 1 ELSE 0 END,
              first_attempt_at = CASE WHEN c.attempted THEN coalesce(d.first_attempt_at, c.attempted_at)
                                      ELSE d.first_attempt_at END,
              retry_urls = CASE WHEN c.retry_urls IS NULL THEN NULL
                                ELSE ARRAY(SELECT jsonb_array_elements_text(c.retry_urls::jsonb)) END`,
  from: "c",
  where: "d.destination_id = c.destination_id AND d.id = c.id",
  returning: "d.destination_id, d.id, d.attempt_count",
});

/**
 * Writes a batch of completions in one statement: the deliveries' new state
 * and, for those whose lease still held, their attempt rows.
 * Returns the ids that were written. Every delivery result passes through
 * here (the completion writer batches them), so anything recorded per
 * result belongs in this statement.
 */
export async function completeDeliveries(db: Queryable, completions: readonly DeliveryCompletion[]): Promise<Set<string>> {
  if (completions.length === 0) return new Set();
  const attempts = completions.flatMap((c) => c.attempts.map((a) => ({ c, a })));
  const result = await db.query<{ id: string }>({
    // Prepared: planning this statement costs about as much as running it for a batch of 40.
    name: "waypost_complete_deliveries",
    text: `WITH c AS (
       SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::int[], $4::delivery_status[], $5::timestamptz[],
                            $6::boolean[], $7::timestamptz[], $8::text[], $9::timestamptz[])
         AS c(destination_id, id, lease_token, status, run_at, attempted, attempted_at, retry_urls, finalized_at)
     ), done AS (
       ${completeTransition}
     ), logged AS (
       INSERT INTO delivery_attempts (destination_id, delivery_id, attempt, url_index, url, attempted_at, outcome,
                                      status_code, error, latency_ms, response_body)
       SELECT a.destination_id, a.delivery_id, done.attempt_count, a.url_index, a.url, a.attempted_at, a.outcome,
              a.status_code, a.error, a.latency_ms, a.response_body
         FROM unnest($10::uuid[], $11::bigint[], $12::int[], $13::text[], $14::timestamptz[], $15::attempt_outcome[],
                     $16::int[], $17::text[], $18::int[], $19::text[])
           AS a(destination_id, delivery_id, url_index, url, attempted_at, outcome, status_code, error, latency_ms, response_body)
         JOIN done ON done.destination_id = a.destination_id AND done.id = a.delivery_id
       ON CONFLICT DO NOTHING
       RETURNING 1
     )
     SELECT id FROM done`,
    values: [
      completions.map((c) => c.destinationId),
      completions.map((c) => c.id),
      completions.map((c) => c.leaseToken),
      completions.map((c) => c.status),
      completions.map((c) => c.runAt),
      completions.map((c) => c.attempted),
      completions.map((c) => c.attemptedAt),
      completions.map((c) => (c.retryUrls ? JSON.stringify(c.retryUrls) : null)),
      completions.map((c) => (terminal.has(c.status) ? c.attemptedAt : null)),
      attempts.map(({ c }) => c.destinationId),
      attempts.map(({ c }) => c.id),
      attempts.map(({ a }) => a.urlIndex),
      attempts.map(({ a }) => a.url),
      attempts.map(({ a }) => a.attemptedAt),
      attempts.map(({ a }) => a.outcome),
      attempts.map(({ a }) => a.statusCode),
      attempts.map(({ a }) => a.error),
      attempts.map(({ a }) => a.latencyMs),
      attempts.map(({ a }) => a.responseBody),
    ],
  });
  return new Set(result.rows.map((r) => r.id));
}
