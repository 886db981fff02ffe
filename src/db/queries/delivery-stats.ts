import type { Query } from "../job-table/index.js";
import type { Queryable } from "../pool.js";
import { attemptsSinceSql } from "./attempts-of.js";

/** One minute of a destination's activity. */
export interface MinuteRow {
  minute: Date;
  delivered: number;
  failed: number;
  expired: number;
  attempts: number;
  successes: number;
  /** Retryable or permanent: the endpoint answered badly or not at all. */
  failedAttempts: number;
  p50: number;
  p99: number;
  /** Values warehouse loads did not store in their columns. */
  discarded: number;
}

/**
 * Per-minute figures from `since` (a minute boundary): deliveries by the
 * minute they reached a final state (deliveries_destination_finalized_idx),
 * attempts and their latency percentiles by the minute they were made
 * (the time indexes of delivery_attempts and delivery_batch_attempts; a
 * batch attempt counts once for each delivery it stands for). Only minutes with activity.
 * Abandoned attempts count as attempts, but their latency (cut short) does
 * not enter the percentiles.
 */
/** The series as SQL (exported so that tests can EXPLAIN exactly what runs). */
export function minuteSeriesQuery(destinationId: string, since: Date): Query {
  return {
    text: `WITH finals AS (
       SELECT date_trunc('minute', finalized_at) AS minute,
              count(*) FILTER (WHERE status = 'delivered') AS delivered,
              count(*) FILTER (WHERE status = 'failed') AS failed,
              count(*) FILTER (WHERE status = 'expired') AS expired
         FROM deliveries
        WHERE destination_id = $1 AND finalized_at >= $2
        GROUP BY 1
     ), tries AS (
       SELECT date_trunc('minute', attempted_at) AS minute,
              count(*) AS attempts,
              count(*) FILTER (WHERE outcome = 'success') AS successes,
              count(*) FILTER (WHERE outcome IN ('retryable', 'permanent')) AS failed_attempts,
              sum(discarded_values) AS discarded,
              percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_ms) FILTER (WHERE outcome <> 'abandoned') AS p50,
              percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_ms) FILTER (WHERE outcome <> 'abandoned') AS p99
         FROM (${attemptsSinceSql("$1", "$2")}) a
        GROUP BY 1
     )
     SELECT coalesce(f.minute, t.minute) AS minute, f.delivered, f.failed, f.expired, t.attempts, t.successes, t.failed_attempts, t.p50, t.p99,
            t.discarded
       FROM finals f FULL JOIN tries t ON t.minute = f.minute
      ORDER BY 1`,
    values: [destinationId, since],
  };
}

export async function selectMinuteSeries(db: Queryable, destinationId: string, since: Date): Promise<MinuteRow[]> {
  const query = minuteSeriesQuery(destinationId, since);
  const result = await db.query<{
    minute: Date;
    delivered: string | null;
    failed: string | null;
    expired: string | null;
    attempts: string | null;
    successes: string | null;
    failed_attempts: string | null;
    p50: number | null;
    p99: number | null;
    discarded: string | null;
  }>(query.text, query.values);
  return result.rows.map((r) => ({
    minute: r.minute,
    delivered: Number(r.delivered ?? 0),
    failed: Number(r.failed ?? 0),
    expired: Number(r.expired ?? 0),
    attempts: Number(r.attempts ?? 0),
    successes: Number(r.successes ?? 0),
    failedAttempts: Number(r.failed_attempts ?? 0),
    p50: r.p50 ?? 0,
    p99: r.p99 ?? 0,
    discarded: Number(r.discarded ?? 0),
  }));
}

/** Attempt latency percentiles over the attempts made since one moment. */
export interface LatencyRow {
  p50: number | null;
  p99: number | null;
}

/**
 * Attempt latency percentiles since each of `since` (abandoned attempts left
 * out), in the same order; one scan of the earliest window.
 */
export async function selectLatencyPercentiles(db: Queryable, destinationId: string, since: readonly Date[]): Promise<LatencyRow[]> {
  const earliest = new Date(Math.min(...since.map((d) => d.getTime())));
  const columns = since.map(
    (_d, i) =>
      `percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_ms) FILTER (WHERE attempted_at >= $${i + 3}) AS p50_${i},
            percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_ms) FILTER (WHERE attempted_at >= $${i + 3}) AS p99_${i}`,
  );
  const result = await db.query<Record<string, number | null>>(
    `SELECT ${columns.join(",\n            ")}
       FROM (${attemptsSinceSql("$1", "$2")}) a
      WHERE outcome <> 'abandoned'`,
    [destinationId, earliest, ...since],
  );
  const row = result.rows[0]!;
  return since.map((_d, i) => ({ p50: row[`p50_${i}`] ?? null, p99: row[`p99_${i}`] ?? null }));
}
