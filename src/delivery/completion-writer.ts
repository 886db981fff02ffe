import type pg from "pg";
import type { Clock } from "../clock.js";
import { completeDeliveries, type DeliveryCompletion } from "../db/job-table/index.js";
import { withTransaction } from "../db/pool.js";
import type { HealthPolicy, Transition } from "../health/circuit.js";
import { recordHealth } from "../health/record-health.js";
import type { Logger } from "../logger.js";

export interface CompletionWriterOptions {
  pool: pg.Pool;
  logger: Logger;
  /**
   * Called with the completions that were written (their lease still held)
   * and those that were not: the delivery was cancelled, expired, replayed
   * or taken over by another process meanwhile.
   */
  onWritten?: (written: DeliveryCompletion[], stale: DeliveryCompletion[], transitions: Transition[]) => void;
  /**
   * Endpoint health: each batch's results also update their destinations'
   * health rows, in the same transaction; the circuit transitions that made
   * are passed to onWritten.
   */
  health?: { policy: HealthPolicy; clock: Clock } | undefined;
  /** Flush at once at this many; otherwise after `delayMs`. */
  batchSize?: number;
  delayMs?: number;
}

export interface CompletionWriter {
  add(completion: DeliveryCompletion): void;
  /** Resolves when everything added so far is written. */
  flush(): Promise<void>;
}

/**
 * Batches completions into one statement each, as River does: at high rates
 * this turns thousands of small transactions into a few large ones. A failed
 * write keeps its batch and tries again; until it succeeds, the leases keep
 * other processes off those deliveries, and if this process dies they expire.
 */
export function createCompletionWriter(options: CompletionWriterOptions): CompletionWriter {
  const batchSize = options.batchSize ?? 500;
  // Results wait up to this long to share a statement: a few more
  // milliseconds before a delivery is recorded buy much cheaper writes.
  const delayMs = options.delayMs ?? 20;
  let buffer: DeliveryCompletion[] = [];
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<void> = Promise.resolve();

  function schedule() {
    if (buffer.length >= batchSize) {
      if (timer) clearTimeout(timer);
      timer = undefined;
      void drain();
    } else if (!timer) {
      timer = setTimeout(() => {
        timer = undefined;
        void drain();
      }, delayMs);
    }
  }

  /**
   * The deliveries first, then their health rows: the claim may wait for a
   * health row while holding delivery rows, never the other way round, so
   * taking them in this order cannot deadlock with it.
   */
  async function write(batch: DeliveryCompletion[]): Promise<{ written: Set<string>; transitions: Transition[] }> {
    const health = options.health;
    if (!health) return { written: await completeDeliveries(options.pool, batch), transitions: [] };
    return withTransaction(options.pool, async (tx) => {
      const written = await completeDeliveries(tx, batch);
      const recorded = batch.filter((c) => written.has(c.id));
      return { written, transitions: await recordHealth(tx, recorded, health.policy, health.clock.now()) };
    });
  }

  function drain(): Promise<void> {
    writing = writing.then(async () => {
      while (buffer.length > 0) {
        const batch = buffer.slice(0, batchSize);
        try {
          const { written, transitions } = await write(batch);
          buffer = buffer.slice(batch.length);
          options.onWritten?.(
            batch.filter((c) => written.has(c.id)),
            batch.filter((c) => !written.has(c.id)),
            transitions,
          );
        } catch (error) {
          options.logger.error({ err: error, count: batch.length }, "writing delivery results failed; retrying");
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      }
    });
    return writing;
  }

  return {
    add(completion) {
      buffer.push(completion);
      schedule();
    },
    flush() {
      if (timer) clearTimeout(timer);
      timer = undefined;
      return drain();
    },
  };
}
