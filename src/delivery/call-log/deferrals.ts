import type { Clock } from "../../clock.js";

/**
 * Cursors waiting here for more calls to fill their kind's batch (see
 * page-plan.ts), each until a time of the clock: the claim leaves them
 * out until then. New calls may fill a batch sooner, so a notification of
 * new calls forgets them all (each is read again and waits again if it
 * must). Kept in the process: another process may send a short page
 * sooner, which costs a smaller batch, never a call.
 */
export interface Deferrals {
  /** A mark of the calls seen so far: taken before a page is read, handed back with `defer`. */
  mark(): number;
  /**
   * The cursor waits until `untilMs`, unless new calls were announced since
   * `mark` (they may fill the batch: it is woken at once instead).
   */
  defer(key: string, untilMs: number, mark: number): void;
  /** The keys still waiting now. */
  waiting(): string[];
  /** Forgets them all (new calls came in, or everything is to be sent now). */
  clear(): void;
  close(): void;
}

export function createDeferrals(options: { clock: Clock; onDue: () => void }): Deferrals {
  const until = new Map<string, number>();
  // Moves on with every clear(): a page read before new calls were announced must not wait past them.
  let generation = 0;
  let timer: NodeJS.Timeout | undefined;

  // One timer, for the earliest: by the clock's distance, as real time (a test's clock moves by poke instead).
  function schedule() {
    clearTimeout(timer);
    timer = undefined;
    if (until.size === 0) return;
    const earliest = Math.min(...until.values());
    timer = setTimeout(
      () => {
        timer = undefined;
        options.onDue();
      },
      Math.max(0, earliest - options.clock.now().getTime()),
    );
    timer.unref();
  }

  return {
    mark: () => generation,
    defer(key, ms, mark) {
      if (mark !== generation) {
        options.onDue();
        return;
      }
      until.set(key, ms);
      schedule();
    },
    waiting() {
      const now = options.clock.now().getTime();
      for (const [key, ms] of until) if (ms <= now) until.delete(key);
      return [...until.keys()];
    },
    clear() {
      generation++;
      until.clear();
      schedule();
    },
    close() {
      clearTimeout(timer);
      until.clear();
    },
  };
}
