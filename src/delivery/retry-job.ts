import type pg from "pg";
import type { JobTableDriver, BulkReplay, ReplayPosition } from "../db/job-table/index.js";
import { lockDestinationIfExists, type JobRow } from "../db/queries/background-jobs.js";
import { destinationDeleted } from "./backfill-job.js";
import type { JobHandler, PageOutcome } from "../background/job-runner.js";

/** A bulk retry's fixed parameters, as stored with the job (times as ISO strings). */
export interface RetryParams {
  statuses: Array<"failed" | "expired" | "retrying">;
  messageId?: string;
  userId?: string;
  since?: string;
  until?: string;
  /** Messages received before this are past retention: not replayed. */
  retentionCutoff: string;
  /** The newest delivery id when the retry was asked for: later deliveries are not part of it. */
  maxId: string;
}

/** A bulk retry's counters: matched (and not replayable) when it was asked for; retried as its pages go. */
export interface RetryProgress {
  matched: number;
  retried: number;
  notReplayable: number;
}

/** The replay a stored retry job describes. */
export function replayOf(destinationId: string, params: RetryParams): BulkReplay {
  return {
    filter: {
      destinationId,
      statuses: params.statuses,
      messageId: params.messageId,
      userId: params.userId,
      since: params.since ? new Date(params.since) : undefined,
      until: params.until ? new Date(params.until) : undefined,
    },
    retentionCutoff: new Date(params.retentionCutoff),
    maxId: params.maxId,
  };
}

/**
 * A bulk retry's page: the next `pageSize` matching deliveries (default
 * 1,000: each page is one statement, kept short) in creation order, replayed
 * with a fresh retry window, while the destination exists (a deleted one's
 * deliveries are cancelled; replaying them would bring them back).
 */
export function createRetryJob(options: { pageSize?: number; jobTable: JobTableDriver }): JobHandler {
  const pageSize = options.pageSize ?? 1_000;
  const { jobTable } = options;
  return {
    async page(tx: pg.PoolClient, job: JobRow, now: Date): Promise<PageOutcome> {
      if (!(await lockDestinationIfExists(tx, job.destination_id))) return { kind: "stop", state: "cancelled", error: destinationDeleted };
      const progress = job.progress as unknown as RetryProgress;
      const after = typeof job.cursor?.id === "string" ? (job.cursor as unknown as ReplayPosition) : undefined;
      const batch = await jobTable.replayBatch(
        tx,
        replayOf(job.destination_id, job.params as unknown as RetryParams),
        after,
        now,
        pageSize,
      );
      return {
        kind: "page",
        cursor: { ...(batch.next ?? after ?? {}) },
        progress: { ...progress, retried: progress.retried + batch.replayed },
        last: batch.next === undefined,
      };
    },
  };
}
