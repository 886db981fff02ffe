import type { Queryable } from "../../db/pool.js";
import { notifyHookSources } from "../../db/queries/hook-notify.js";
import type { Logger } from "../../logger.js";

export interface HookWakerOptions {
  pool: Queryable;
  logger: Pick<Logger, "warn">;
  /** Least time between two NOTIFY statements, in ms (10 by default); sources stored in between go in the next one. */
  intervalMs?: number;
}

export interface HookWaker {
  /** A pending request of the source was committed: wake the processors. */
  stored(sourceId: string): void;
  /** Sends what is still owed, and waits for the statement in flight. */
  close(): Promise<void>;
}

/**
 * Wakes every process's hook processor (this one's too: they LISTEN) after
 * the inbound URL committed a request, by `NOTIFY waypost_hooks, '<sourceId>'`
 * sent as its own statement after the commit, at most one statement per
 * `intervalMs` carrying every source stored since the last. Not in the
 * storing transaction: a notifying commit holds Postgres's notification
 * lock through its WAL flush, which would serialise the inbound URL's
 * commits (the same reason the delivery loops' waker is separate).
 * A wake-up is only a hint: a processor that misses one finds the request
 * at its next poll, so a failed NOTIFY is logged and not retried.
 */
export function createHookWaker(options: HookWakerOptions): HookWaker {
  const intervalMs = options.intervalMs ?? 10;
  let owed = new Set<string>();
  let lastSentAt = Number.NEGATIVE_INFINITY;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;
  let closed = false;

  function send(): void {
    const ids = [...owed];
    owed = new Set();
    lastSentAt = performance.now();
    inFlight = notifyHookSources(options.pool, ids)
      .catch((error: unknown) => options.logger.warn({ err: error }, "could not wake the hook processors; they poll"))
      .finally(() => {
        inFlight = undefined;
        if (owed.size > 0 && !closed) schedule();
      });
  }

  function schedule(): void {
    if (inFlight || timer) return;
    const wait = lastSentAt + intervalMs - performance.now();
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
    stored(sourceId) {
      owed.add(sourceId);
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
