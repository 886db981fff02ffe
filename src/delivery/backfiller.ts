import type pg from "pg";
import type { Clock } from "../clock.js";
import { enqueueBackfill } from "../db/job-table/index.js";
import { selectBackfillCandidates, type BackfillRange } from "../db/queries/backfill-candidates.js";
import type { Logger } from "../logger.js";
import type { CompiledFilter } from "../routing/filter.js";

export interface BackfillerOptions {
  pool: pg.Pool;
  clock: Clock;
  logger: Logger;
  /**
   * Calls per batch (default 5,000): each batch's insert reads the
   * destination's queued deliveries once (to skip calls already waiting
   * there), so batches are large; the filter runs over them in slices of
   * `sliceSize` with a turn of the event loop between.
   */
  batchSize?: number;
  sliceSize?: number;
}

export interface Backfill extends BackfillRange {
  /** The destination's filter as it is now; absent: every call. */
  matches?: CompiledFilter;
}

export interface Backfiller {
  /** Starts a backfill in the background; returns at once. */
  start(backfill: Backfill): void;
  /** Resolves when every backfill started so far has ended (tests, shutdown). */
  idle(): Promise<void>;
  /** Stops between batches: a backfill cut short can be asked for again (it skips what it already created). */
  stop(): Promise<void>;
}

/**
 * Runs backfills in batches: reads a page of calls the destination has no
 * finished delivery for, keeps those its filter passes, and queues those
 * with no delivery waiting either in one transaction, yielding to the
 * event loop between slices and batches so ingest and the admin API stay
 * responsive. Deliveries it creates are ordinary ones:
 * the claim applies rate limits and per-user ordering to them as to any.
 */
export function createBackfiller(options: BackfillerOptions): Backfiller {
  const batchSize = options.batchSize ?? 5_000;
  const sliceSize = options.sliceSize ?? 250;
  const running = new Set<Promise<void>>();
  let stopping = false;

  async function run(backfill: Backfill): Promise<void> {
    let after = "0";
    let queued = 0;
    for (;;) {
      if (stopping) {
        options.logger.warn({ destinationId: backfill.destinationId, queued }, "backfill stopped by shutdown");
        return;
      }
      const page = await selectBackfillCandidates(options.pool, backfill, after, batchSize);
      if (page.length === 0) break;
      after = page[page.length - 1]!.id;
      const passing = backfill.matches ? await filterInSlices(page, backfill.matches, sliceSize) : page;
      queued += await enqueueBackfill(
        options.pool,
        backfill.destinationId,
        passing.map((call) => call.id),
        options.clock.now(),
      );
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    options.logger.info({ destinationId: backfill.destinationId, queued }, "backfill done");
  }

  return {
    start(backfill) {
      const job = run(backfill)
        .catch((error: unknown) => {
          options.logger.error({ err: error, destinationId: backfill.destinationId }, "backfill failed; ask for it again");
        })
        .finally(() => running.delete(job));
      running.add(job);
    },
    async idle() {
      while (running.size > 0) await Promise.all([...running]);
    },
    async stop() {
      stopping = true;
      await this.idle();
    },
  };
}

/** The calls the filter passes, a slice at a time, yielding to the event loop between slices. */
async function filterInSlices<T extends { payload: string }>(
  calls: readonly T[],
  matches: CompiledFilter,
  sliceSize: number,
): Promise<T[]> {
  const passing: T[] = [];
  for (let start = 0; start < calls.length; start += sliceSize) {
    if (start > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    for (const call of calls.slice(start, start + sliceSize)) if (matches(JSON.parse(call.payload))) passing.push(call);
  }
  return passing;
}
