import type pg from "pg";
import type { Clock } from "../clock.js";
import { withTransaction } from "../db/pool.js";
import {
  claimJob,
  endJob,
  extendJobLease,
  lockJobForPage,
  recordJobFailure,
  releaseJob,
  savePage,
  selectHeldJob,
  type JobKind,
  type JobRow,
} from "../db/queries/background-jobs.js";
import type { Logger } from "../logger.js";
import { createLeasedWorker, type LeasedWorker, type LeaseSource } from "./leased-worker.js";

/** What one page of a job did, decided by its kind's handler inside the page's transaction. */
export type PageOutcome =
  | { kind: "page"; cursor: Record<string, unknown>; progress: Record<string, number>; last: boolean }
  /** The job cannot go on (its destination is gone): nothing was written. */
  | { kind: "stop"; state: "cancelled" | "failed"; error: string };

/** A kind of job: one page of its work, written in the transaction `tx` (which the runner commits with the job's cursor). */
export interface JobHandler {
  /**
   * Locks a page needs beyond the job's own (a backfill's per-destination
   * lock), taken first: waiting for them, a page holds no lock on the job,
   * so a cancel is not held up by it.
   */
  lock?(tx: pg.PoolClient, destinationId: string): Promise<void>;
  /**
   * Work of a page done before its transaction, when the page is slow I/O no
   * transaction should stay open over (a lake's files rewritten): it gets
   * the job as last committed, and what it returns is handed to `page`,
   * which commits it with the cursor. It must be safe to do again: a page
   * whose commit is lost (a crash, a lease taken over) is done again from
   * the same cursor.
   */
  prepare?(job: JobRow): Promise<unknown>;
  page(tx: pg.PoolClient, job: JobRow, now: Date, prepared?: unknown): Promise<PageOutcome>;
  /** Gives up what the handler holds between pages (a replay's open archive), once the runner has stopped. */
  close?(): Promise<void>;
}

export interface JobRunnerOptions {
  pool: pg.Pool;
  /** Lease timing follows this clock (tests move it past a lease at once). */
  clock: Clock;
  logger: Logger;
  handlers: Record<JobKind, JobHandler>;
  /** A job's lease (the deliveries' WAYPOST_LEASE_MS): after it, another process takes the job over. */
  leaseMs: number;
  /** Real time between looks for jobs nobody holds (1 s by default); wake() looks at once. */
  pollMs?: number;
  /** Jobs this process works at once (4 by default), at most one per destination across processes. */
  concurrency?: number;
  /** A failed page is tried again after this (5 s by default)... */
  retryMs?: number;
  /** ...and the job fails after this many failed pages in a row (5 by default). */
  maxFailures?: number;
}

/** Works background jobs; wake() looks at once (a job was just created in this process). */
export type JobRunner = LeasedWorker;

/**
 * Works background jobs (backfills, bulk retries, lake deletions) stored in Postgres. Any
 * process with the worker role runs one: it claims a running job nobody
 * holds (new, or whose holder died and let its lease run out) of a
 * destination with no job held (claimJob: one job per destination at a
 * time, so one destination's burst takes one lane and the others' jobs run
 * in the rest), works it a page at a time from its stored cursor, and ends
 * it. Each page commits its work together with the cursor and counters, in
 * a transaction that first locks the job's row under this process's lease
 * token: a job is never worked by two processes at once, and one taken over
 * after a crash goes on exactly where the last commit left it. Leases are
 * kept by the page commits and by the leased worker's heartbeat between them.
 */
export function createJobRunner(options: JobRunnerOptions): JobRunner {
  const { pool, clock, logger, leaseMs } = options;
  const retryMs = options.retryMs ?? 5_000;
  const maxFailures = options.maxFailures ?? 5;

  const jobs: LeaseSource<JobRow> = {
    leaseMs,
    claim: (token, now) => claimJob(pool, token, now, leaseMs),
    keyOf: (job) => job.id,
    extend: (job, token, now) => extendJobLease(pool, job.id, token, now, leaseMs),
    release: (job, token) => releaseJob(pool, job.id, token),
  };

  async function work(job: JobRow, token: string, held: () => boolean): Promise<void> {
    const handler = options.handlers[job.kind];
    logger.info({ jobId: job.id, kind: job.kind, destinationId: job.destination_id, cursor: job.cursor }, "working a background job");
    while (held()) {
      const outcome = await runPage(handler, job, token).catch(async (error: unknown) => {
        const state = await recordJobFailure(pool, job.id, token, {
          error: error instanceof Error ? error.message : String(error),
          now: clock.now(),
          retryMs,
          maxFailures,
        }).catch((writeError: unknown) => {
          logger.warn({ err: writeError, jobId: job.id }, "recording a background job's failure failed; its lease runs out");
          return undefined;
        });
        logger.warn({ err: error, jobId: job.id, state }, "a background job's page failed");
        return "ended" as const;
      });
      if (outcome === "ended") return;
      // Let other work in between pages.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /** One page in one transaction; "ended" when the job is over here (or no longer this process's). */
  async function runPage(handler: JobHandler, job: JobRow, token: string): Promise<"more" | "ended"> {
    const id = job.id;
    let prepared: unknown;
    if (handler.prepare) {
      const committed = await selectHeldJob(pool, id, token);
      if (!committed) return "ended";
      prepared = await handler.prepare(committed);
    }
    return withTransaction(pool, async (tx) => {
      await handler.lock?.(tx, job.destination_id);
      const current = await lockJobForPage(tx, id, token);
      if (!current) return "ended";
      const now = clock.now();
      const outcome = await handler.page(tx, current, now, prepared);
      if (outcome.kind === "stop") {
        await endJob(tx, id, token, { state: outcome.state, error: outcome.error, now });
        logger.info({ jobId: id, state: outcome.state, error: outcome.error }, "background job stopped");
        return "ended";
      }
      await savePage(tx, id, token, { cursor: outcome.cursor, progress: outcome.progress, now, leaseMs });
      if (!outcome.last) return "more";
      await endJob(tx, id, token, { state: "done", now });
      logger.info({ jobId: id, kind: current.kind, progress: outcome.progress }, "background job done");
      return "ended";
    });
  }

  const worker = createLeasedWorker({
    lease: jobs,
    work,
    name: "background job",
    concurrency: options.concurrency,
    pollMs: options.pollMs,
    clock,
    logger,
  });
  return {
    ...worker,
    async stop() {
      await worker.stop();
      await Promise.allSettled(Object.values(options.handlers).map((handler) => handler.close?.()));
    },
  };
}
