import type pg from "pg";
import type { Clock } from "../clock.js";
import { replayBatch, type BulkReplay, type ReplayPosition } from "../db/queries/replay-deliveries.js";
import type { Logger } from "../logger.js";

export interface BulkReplayerOptions {
  pool: pg.Pool;
  clock: Clock;
  logger: Logger;
  /** Deliveries per statement: small enough to keep each transaction short. */
  batchSize?: number;
}

export interface BulkReplayer {
  /** Starts replaying in the background; returns at once. */
  start(replay: BulkReplay): void;
  /** Resolves when every replay started so far has ended (tests, shutdown). */
  idle(): Promise<void>;
  /** Stops between batches: a replay cut short can be asked for again (replayed deliveries no longer match). */
  stop(): Promise<void>;
}

/**
 * Runs bulk replays in batches, one statement each, walking the matching
 * deliveries in creation order. A replay lives in this process only: if the
 * process stops first, what was replayed stays replayed and the rest can be
 * asked for again.
 */
export function createBulkReplayer(options: BulkReplayerOptions): BulkReplayer {
  const batchSize = options.batchSize ?? 1000;
  const running = new Set<Promise<void>>();
  let stopping = false;

  async function run(replay: BulkReplay): Promise<void> {
    let after: ReplayPosition | undefined;
    let replayed = 0;
    do {
      if (stopping) {
        options.logger.warn({ destinationId: replay.filter.destinationId, replayed }, "bulk replay stopped by shutdown");
        return;
      }
      const batch = await replayBatch(options.pool, replay, after, options.clock.now(), batchSize);
      replayed += batch.replayed;
      after = batch.next;
      // Let other work in between batches.
      await new Promise<void>((resolve) => setImmediate(resolve));
    } while (after);
    options.logger.info({ destinationId: replay.filter.destinationId, replayed }, "bulk replay done");
  }

  return {
    start(replay) {
      const job = run(replay)
        .catch((error: unknown) => {
          options.logger.error({ err: error, destinationId: replay.filter.destinationId }, "bulk replay failed; ask for it again");
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
