import type { Queryable } from "../pool.js";
import { unreadByCursorSql } from "../call-log/log-read.js";
import { noRowOfItsOwn } from "./log-deliveries.js";

/** What a destination on the call log adds to its figures (nothing for one per call). */
export interface LogStatsRow {
  /** Calls its batches delivered (sum of log_batches.delivered), and calls still ahead of a cursor by status. */
  counts: { delivered: number; pending: number; retrying: number };
  /** Delivered calls per minute since `since`, by the minute their batch finished (log_batches_finished_idx). */
  minutes: { minute: Date; delivered: number }[];
}

const onLog = "EXISTS (SELECT 1 FROM destinations WHERE id = $1 AND delivery_layout = 'log')";

/**
 * A destination's derived deliveries counted as the `deliveries` view's
 * rows are: delivered from its batches' counts (a batch's `delivered`
 * excludes its held-back calls and exceptions, which have rows of their
 * own); pending and retrying, the calls ahead of its cursors without a row
 * or fate of their own (a backlog, counted as per-call backlogs are).
 * Its attempts are counted from the batch attempt rows, as every batch's.
 * One probe of the destination's row when it is not on the log.
 */
export async function selectLogStats(db: Queryable, destinationId: string, since: Date): Promise<LogStatsRow> {
  const [counts, minutes] = await Promise.all([
    db.query<{ delivered: string; pending: string; retrying: string }>(
      `SELECT (SELECT coalesce(sum(delivered), 0) FROM log_batches WHERE ${onLog} AND destination_id = $1)::text AS delivered,
              count(*) FILTER (WHERE c.failures = 0)::text AS pending, count(*) FILTER (WHERE c.failures > 0)::text AS retrying
         FROM log_cursors c
         JOIN messages m ON m.source_id = c.source_id AND ${unreadByCursorSql("c", "m")}
        WHERE ${onLog} AND c.destination_id = $1 AND ${noRowOfItsOwn("$1::uuid").join(" AND ")}`,
      [destinationId],
    ),
    db.query<{ minute: Date; delivered: number }>(
      `SELECT date_trunc('minute', finished_at) AS minute, sum(delivered)::int AS delivered FROM log_batches
        WHERE ${onLog} AND destination_id = $1 AND finished_at >= $2 AND delivered > 0
        GROUP BY 1 ORDER BY 1`,
      [destinationId, since],
    ),
  ]);
  const row = counts.rows[0]!;
  return {
    counts: { delivered: Number(row.delivered), pending: Number(row.pending), retrying: Number(row.retrying) },
    minutes: minutes.rows,
  };
}
