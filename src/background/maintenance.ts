import { purgeOldLogBatches } from "../db/call-log/log-retention.js";
import { purgeProfileCallsOfGoneMessages } from "../db/queries/identity/profile-retention.js";
import type pg from "pg";
import type { Clock } from "../clock.js";
import { type JobTableDriver, createDayPartitions, dropDaysBefore } from "../db/job-table/index.js";
import { purgeEndedJobs } from "../db/queries/background-jobs.js";
import { purgeOldHookRequests } from "../db/queries/hook-requests.js";
import type { Logger } from "../logger.js";

export interface MaintenanceOptions {
  pool: pg.Pool;
  clock: Clock;
  logger: Logger;
  retentionMs: number;
  deadlineMs: number;
  intervalMs?: number;
  /** How often to check the job table for dead rows to vacuum and stale statistics (2 s by default). */
  vacuumCheckMs?: number;
  /** The job table's driver (one Postgres's or Citus's). */
  jobTable: JobTableDriver;
}

export interface Maintenance {
  /**
   * One pass: create the coming days' partitions, expire paused deliveries,
   * drop the days of history and attempts past retention, purge messages
   * past it, background jobs (backfills, bulk retries) that ended before it,
   * and webhook sources' requests received before it.
   */
  runOnce(): Promise<{ expired: number; purged: number; droppedDays: number; jobsPurged: number; hookRequestsPurged: number }>;
  /** VACUUM the job table if dead rows have piled up; true when it did. */
  vacuumIfNeeded(): Promise<boolean>;
  start(): void;
  stop(): Promise<void>;
}

const purgeBatch = 5_000;
/** Day partitions are created this many days ahead, so a completion always finds its day's. */
const daysAhead = 3;

/** Periodic housekeeping; safe to run in several processes at once. */
export function createMaintenance(options: MaintenanceOptions): Maintenance {
  const repeating: Array<{ stop(): Promise<void> }> = [];
  const { jobTable } = options;

  async function vacuumIfNeeded(): Promise<boolean> {
    const activity = await jobTable.readQueueActivity(options.pool);
    const vacuumed = await jobTable.vacuumJobTableIfNeeded(options.pool, activity);
    if (vacuumed) options.logger.info("vacuumed the job table (dead rows had piled up)");
    // A vacuum analyzes too; otherwise statistics gone stale are taken anew.
    else if (await jobTable.analyzeJobTableIfStale(options.pool, activity))
      options.logger.debug("analyzed the job table (its rows had changed)");
    return vacuumed;
  }

  async function runOnce() {
    const now = options.clock.now();
    await createDayPartitions(options.pool, now, daysAhead);
    const expired = await jobTable.expirePausedDeliveries(options.pool, now, options.deadlineMs);
    const cutoff = new Date(now.getTime() - options.retentionMs);
    // Whole days first: the messages' delete then finds few finished deliveries left.
    const dropped = await dropDaysBefore(options.pool, cutoff);
    let purged = 0;
    for (;;) {
      const n = await jobTable.purgeOldMessages(options.pool, cutoff, purgeBatch);
      purged += n;
      if (n < purgeBatch) break;
    }
    // The call log's delivered batches, with the calls they held.
    for (;;) {
      const n = await purgeOldLogBatches(options.pool, cutoff, purgeBatch);
      if (n < purgeBatch) break;
    }
    // Profiles' links to the calls that went (the timeline reads only stored calls).
    for (;;) {
      const n = await purgeProfileCallsOfGoneMessages(options.pool, purgeBatch);
      if (n < purgeBatch) break;
    }
    const jobsPurged = await purgeEndedJobs(options.pool, cutoff);
    // Kept as long as the calls they made.
    let hookRequestsPurged = 0;
    for (;;) {
      const n = await purgeOldHookRequests(options.pool, cutoff, purgeBatch);
      hookRequestsPurged += n;
      if (n < purgeBatch) break;
    }
    const droppedDays = dropped.length;
    if (expired > 0 || purged > 0 || droppedDays > 0 || jobsPurged > 0 || hookRequestsPurged > 0) {
      options.logger.info(
        { expired, purged, droppedDays: dropped.map((d) => `${d.table}_${d.day}`), jobsPurged, hookRequestsPurged },
        "maintenance",
      );
    }
    return { expired, purged, droppedDays, jobsPurged, hookRequestsPurged };
  }

  return {
    runOnce,
    vacuumIfNeeded,
    start() {
      repeating.push(
        repeat(options.vacuumCheckMs ?? 2_000, () =>
          vacuumIfNeeded().catch((error) => options.logger.error({ err: error }, "vacuum failed")),
        ),
        repeat(
          options.intervalMs ?? 60_000,
          () => runOnce().catch((error) => options.logger.error({ err: error }, "maintenance failed")),
          () => options.logger.debug("maintenance run skipped: the last one is still going"),
        ),
      );
    },
    async stop() {
      await Promise.all(repeating.splice(0).map((r) => r.stop()));
    },
  };
}

/**
 * Runs `run` every `ms`. A run still going when its next tick comes (a slow
 * purge, a lock held elsewhere) makes that tick skip: runs never pile up.
 */
function repeat(ms: number, run: () => Promise<unknown>, onSkip?: () => void): { stop(): Promise<void> } {
  let running: Promise<unknown> | undefined;
  const timer = setInterval(() => {
    if (running) {
      onSkip?.();
      return;
    }
    running = run().finally(() => (running = undefined));
  }, ms);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
