import { type Clock, systemClock } from "../clock.js";
import type { Queryable } from "../db/pool.js";
import { wakeWorkers } from "../db/job-table/index.js";
import type { Logger } from "../logger.js";

export interface LoopWakerOptions {
  pool: Queryable;
  logger: Pick<Logger, "warn">;
  /**
   * Least time between two NOTIFYs, in ms (10 by default). Calls queued in
   * between are announced by one NOTIFY when it has passed.
   */
  intervalMs?: number;
  /** Measures the interval (injectable for tests); the system clock by default. */
  clock?: Clock;
}

export interface LoopWaker {
  /** Deliveries were committed: wake the delivery loops. */
  queued(): void;
  /** Sends a NOTIFY still owed, and waits for the one in flight. */
  close(): Promise<void>;
}

/**
 * Wakes the delivery loops (every process's, this one's too: they LISTEN)
 * after ingest has committed deliveries, by a NOTIFY sent as its own
 * statement, at most once per `intervalMs`.
 *
 * Why not a NOTIFY in the ingest statement, where it was: a transaction
 * that notified takes Postgres's one notification lock at commit and holds
 * it through its WAL flush, so every notifying commit waited for the one
 * before. Single Track calls at 200 a second beside a backfill spent most of
 * their time waiting for that lock (p99 over 100 ms). A NOTIFY on its own
 * writes no WAL, and there is at most one per interval.
 *
 * A wake-up is only a hint: a loop that misses one finds the deliveries at
 * its next poll, so a failed NOTIFY is logged and not retried.
 *
 * This process's own loop is woken the same way, not called directly: a
 * direct poke after every request gave no lower latency here.
 */
export function createLoopWaker(options: LoopWakerOptions): LoopWaker {
  const intervalMs = options.intervalMs ?? 10;
  const clock = options.clock ?? systemClock;
  let lastSentAt = Number.NEGATIVE_INFINITY;
  let owed = false;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;
  let closed = false;

  function send(): void {
    owed = false;
    lastSentAt = clock.now().getTime();
    inFlight = wakeWorkers(options.pool)
      .catch((error: unknown) => options.logger.warn({ err: error }, "could not wake the delivery loops; they poll"))
      .finally(() => {
        inFlight = undefined;
        if (owed && !closed) schedule();
      });
  }

  /** Sends now if the interval has passed and none is in flight, else once it has. */
  function schedule(): void {
    if (inFlight || timer) return;
    const wait = lastSentAt + intervalMs - clock.now().getTime();
    if (wait <= 0) {
      send();
      return;
    }
    timer = setTimeout(() => {
      timer = undefined;
      if (owed) send();
    }, wait);
  }

  return {
    queued() {
      owed = true;
      if (!closed) schedule();
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await inFlight;
      if (owed) {
        send();
        await inFlight;
      }
    },
  };
}
