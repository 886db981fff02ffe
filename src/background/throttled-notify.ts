import { type Clock, systemClock } from "../clock.js";
import { notifyChannel } from "../db/notify.js";
import type { Queryable } from "../db/pool.js";
import type { Logger } from "../logger.js";

export interface ThrottledNotifyOptions {
  pool: Queryable;
  /** The channel its listeners LISTEN on (a notifier topic). */
  channel: string;
  logger: Pick<Logger, "warn">;
  /**
   * Least time between two NOTIFY statements, in ms (10 by default). What is
   * added in between goes in one statement when it has passed.
   */
  intervalMs?: number;
  /** Measures the interval (injectable for tests); the system clock by default. */
  clock?: Clock;
}

export interface ThrottledNotify {
  /**
   * Something was committed: wake the listeners, with `payload` (a key, say
   * a webhook source's id) or none. Payloads added within one interval are
   * sent once each, in one statement.
   */
  add(payload?: string): void;
  /** Sends what is still owed, and waits for the statement in flight. */
  close(): Promise<void>;
}

/**
 * Wakes every process's listeners on a channel (this process's too: it
 * listens like the others) after work was committed, by a NOTIFY sent as a
 * statement of its own, at most one statement per `intervalMs`. Ingest wakes
 * the delivery loops with one, the inbound URL of webhook sources the hook
 * processors with another.
 *
 * Why not a NOTIFY in the committing transaction: a transaction that
 * notified takes Postgres's one notification lock at commit and holds it
 * through its WAL flush, so every notifying commit waited for the one
 * before. Single Track calls at 200 a second beside a backfill spent most
 * of their time waiting for that lock (p99 over 100 ms). A NOTIFY on its own
 * writes no WAL, and there is at most one per interval.
 *
 * A wake-up is only a hint: a listener that misses one finds the work at
 * its next poll, so a failed NOTIFY is logged and not retried.
 */
export function createThrottledNotify(options: ThrottledNotifyOptions): ThrottledNotify {
  const intervalMs = options.intervalMs ?? 10;
  const clock = options.clock ?? systemClock;
  /** Payloads owed a NOTIFY ("" for a wake-up without one). */
  let owed = new Set<string>();
  let lastSentAt = Number.NEGATIVE_INFINITY;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;
  let closed = false;

  function send(): void {
    const payloads = [...owed];
    owed = new Set();
    lastSentAt = clock.now().getTime();
    inFlight = notifyChannel(options.pool, options.channel, payloads)
      .catch((error: unknown) => options.logger.warn({ err: error, channel: options.channel }, "could not wake the listeners; they poll"))
      .finally(() => {
        inFlight = undefined;
        if (owed.size > 0 && !closed) schedule();
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
      if (owed.size > 0) send();
    }, wait);
  }

  return {
    add(payload = "") {
      owed.add(payload);
      if (!closed) schedule();
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await inFlight;
      if (owed.size > 0) {
        send();
        await inFlight;
      }
    },
  };
}
