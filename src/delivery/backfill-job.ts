import type pg from "pg";
import { type JobTableDriver, lockDestinationBackfills } from "../db/job-table/index.js";
import { lockDestinationIfExists, type JobRow } from "../db/queries/background-jobs.js";
import { holdsBack } from "../routing/route-rules.js";
import type { JobHandler, PageOutcome } from "../background/job-runner.js";
import type { AddressGuard } from "../outbound/address-guard.js";
import { createArchiveReplay } from "./archive-replay.js";
import { backfillRules, routeInSlices } from "./backfill-routing.js";

/** A backfill's fixed parameters, as stored with the job. */
export interface BackfillParams {
  since: string;
  until: string;
  /** The destination's settings revision when it was asked for (absent in jobs stored before it was kept). */
  revision?: number;
  /** A replay: the archive lake whose files it reads (docs/lakes.md#replay); absent: the retained calls. */
  fromArchive?: string;
}

/** A backfill's counters: candidates counted when it was asked for; created and filtered as its pages go. */
export interface BackfillProgress {
  candidates: number;
  created: number;
  filtered: number;
  /** A replay's calls read from the archive (absent in other backfills). */
  read?: number;
}

export interface BackfillJobOptions {
  /**
   * Calls per page (default 5,000): each page's insert reads the
   * destination's queued deliveries once (to skip calls already waiting
   * there), so pages are large; the filter runs over them in slices of
   * `sliceSize` with a turn of the event loop between.
   */
  pageSize?: number;
  sliceSize?: number;
  /** The job table's driver (one Postgres's or Citus's). */
  jobTable: JobTableDriver;
  /** A replay's store endpoint passes it on every address it resolves to, as a lake's writes do (absent: not checked, tests only). */
  guard?: AddressGuard | undefined;
}

export const destinationDeleted = "the destination was deleted";

/**
 * A backfill's page: under the per-destination backfill lock (taken before
 * the job's own, see JobHandler.lock), and only if
 * the destination still exists (checked with a lock a deletion waits for,
 * so no delivery is ever queued for a deleted destination), reads the next
 * page of the range's calls without a finished delivery, runs the
 * destination's rules as they are now over them (filter, consent, its
 * kind's matcher: an integration's subscriptions), and queues those it passes
 * that have no delivery waiting either. Deliveries it creates are ordinary
 * ones: the claim applies rate limits and per-user ordering to them.
 */
export function createBackfillJob(options: BackfillJobOptions): JobHandler {
  const pageSize = options.pageSize ?? 5_000;
  const sliceSize = options.sliceSize ?? 250;
  const { jobTable } = options;
  const replay = createArchiveReplay({ pageSize, sliceSize, guard: options.guard });
  return {
    close: () => replay.close(),
    lock: (tx, destinationId) => lockDestinationBackfills(tx, destinationId),
    async page(tx: pg.PoolClient, job: JobRow, now: Date): Promise<PageOutcome> {
      const params = job.params as unknown as BackfillParams;
      const progress = job.progress as unknown as BackfillProgress;
      const destination = await lockDestinationIfExists(tx, job.destination_id);
      if (!destination) return { kind: "stop", state: "cancelled", error: destinationDeleted };
      if (params.fromArchive) return replay.page(tx, job, destination, now);
      const rules = backfillRules(destination);
      const checked = holdsBack(rules);
      const after = typeof job.cursor?.after === "string" ? job.cursor.after : "0";
      const range = { destinationId: job.destination_id, since: new Date(params.since), until: new Date(params.until) };
      const calls = await jobTable.reads.selectBackfillCandidates(tx, range, after, pageSize, checked);
      const passes = checked ? await routeInSlices(calls, rules, sliceSize) : calls.map(() => true);
      const result = await jobTable.enqueueBackfillPage(tx, job.destination_id, { messagePks: calls.map((c) => c.id), passes }, now);
      return {
        kind: "page",
        cursor: { after: calls.length > 0 ? calls[calls.length - 1]!.id : after },
        progress: { ...progress, created: progress.created + result.created, filtered: progress.filtered + result.filtered },
        last: calls.length < pageSize,
      };
    },
  };
}
