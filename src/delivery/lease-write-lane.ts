/**
 * One lane, per process, for the statements that lock the deliveries this
 * process holds: its lease extensions (lease-keeper.ts) and its completion
 * writes (completion-writer.ts). Each locks many rows of the queue in the
 * order its plan visits them; run at once on overlapping deliveries, each
 * can hold a row the other waits for, and Postgres ends the cycle by failing
 * one of them ("deadlock detected": a heartbeat lost, a batch of results
 * retried later). No other process locks these rows while the leases hold
 * (claims skip leased rows), so taking turns here removes the cycle.
 * Completion writes are one at a time already; an extension waits for the
 * write in flight and the next write for it, both a statement's length.
 */
export interface LeaseWriteLane {
  /** Runs `work` once everything handed to the lane before it has settled. */
  run<T>(work: () => Promise<T>): Promise<T>;
  /** Work handed to the lane and not yet settled (the one running included). */
  readonly pending: number;
}

export function createLeaseWriteLane(): LeaseWriteLane {
  let tail: Promise<unknown> = Promise.resolve();
  let pending = 0;
  return {
    run<T>(work: () => Promise<T>): Promise<T> {
      pending++;
      const result = tail.then(work).finally(() => pending--);
      tail = result.catch(() => undefined);
      return result;
    },
    get pending() {
      return pending;
    },
  };
}
