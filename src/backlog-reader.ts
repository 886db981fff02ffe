import type pg from "pg";
import type { Clock } from "./clock.js";
import type { Logger } from "./logger.js";
import type { JobTableDriver } from "./db/job-table/index.js";

export interface BacklogReaderOptions {
  pool: pg.Pool;
  /** The job table's driver: it counts the queue. */
  jobTable: JobTableDriver;
  clock: Clock;
  logger: Logger;
  /** A count younger than this is served again: several scrapers, or a tight scrape interval, cost one query. */
  maxAgeMs?: number;
  /** The query's statement timeout: a scrape never waits longer on the database. */
  timeoutMs?: number;
}

export interface BacklogReader {
  /** Unfinished deliveries by destination id; undefined when the database did not answer. */
  read(): Promise<ReadonlyMap<string, number> | undefined>;
}

/**
 * The backlog per destination for /metrics, read when scraped rather than
 * on a timer, so a process nobody scrapes never runs the count.
 */
export function createBacklogReader(options: BacklogReaderOptions): BacklogReader {
  const maxAgeMs = options.maxAgeMs ?? 5_000;
  const timeoutMs = options.timeoutMs ?? 2_000;
  let cached: { at: number; counts: ReadonlyMap<string, number> } | undefined;
  let inFlight: Promise<ReadonlyMap<string, number> | undefined> | undefined;

  async function query(): Promise<ReadonlyMap<string, number> | undefined> {
    try {
      const counts = await options.jobTable.reads.selectDestinationBacklogs(options.pool, timeoutMs);
      cached = { at: options.clock.now().getTime(), counts };
      return counts;
    } catch (error) {
      // The scrape still answers (process metrics, counters); the gauge is left out rather than stale.
      options.logger.warn({ err: error }, "could not count the delivery backlog for /metrics");
      cached = undefined;
      return undefined;
    }
  }

  return {
    read() {
      if (cached && options.clock.now().getTime() - cached.at < maxAgeMs) return Promise.resolve(cached.counts);
      // Concurrent scrapes share one query.
      inFlight ??= query().finally(() => (inFlight = undefined));
      return inFlight;
    },
  };
}
