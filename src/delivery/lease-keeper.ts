import type { Clock } from "../clock.js";
import type { JobTableDriver, HeldLease } from "../db/job-table/index.js";
import type { Queryable } from "../db/pool.js";
import type { Logger } from "../logger.js";
import { createLeaseWriteLane, type LeaseWriteLane } from "./lease-write-lane.js";

export interface LeaseKeeperOptions {
  pool: Queryable;
  /** Lease timing follows this clock (tests move it past a lease at once). */
  clock: Clock;
  leaseMs: number;
  logger: Logger;
  /** Real time between heartbeats; a third of the lease by default. */
  intervalMs?: number;
  /** Called with the ids a heartbeat found no longer held by this process. */
  onLost?: (ids: string[]) => void;
  /** Shared with the completion writer, so an extension never runs beside a completion write (lease-write-lane.ts). */
  lane?: LeaseWriteLane;
  /** The job table's driver (one Postgres's or Citus's). */
  jobTable: JobTableDriver;
}

export interface LeaseKeeper {
  /** Keeps a claimed delivery's lease, which the claim started at `claimedAt`. */
  hold(lease: HeldLease, claimedAt: Date): void;
  /** Stops keeping it: its result is written (or given up), so the lease is over. */
  release(id: string): void;
  /**
   * Whether this process may send the delivery now. A lease with less than
   * half its length left is extended first (batched with the others asked
   * about in the same turn); false when it could not be: the lease moved
   * on (the delivery may be with another process) or the database is
   * away. The caller then drops the delivery without sending or writing it.
   */
  ensure(id: string): Promise<boolean>;
  /**
   * The held deliveries whose lease, as far as this process knows, ends by
   * `now`: a claim at `now` must leave them alone (see lapsed below).
   */
  lapsed(now: Date): string[];
  /** Extends every held lease now, in one statement (the timer calls it). */
  beat(): Promise<void>;
  start(): void;
  /** Stops the heartbeats; leases still held run out on their own. */
  stop(): void;
  /** Leases held now. */
  readonly size: number;
}

interface Held {
  lease: HeldLease;
  /** When the lease ends as far as this process knows (clock ms). */
  until: number;
}

/**
 * Keeps the leases of the deliveries a process holds (queued for a later
 * round, in flight, or with a result not yet written) alive while it works
 * them. A lease is only as long as WAYPOST_LEASE_MS, but a delivery claimed
 * ahead may wait for the rounds before it, and a request may outlast a short
 * lease on a busy machine; if the lease ran out meanwhile, another process
 * could claim and send the same delivery. So every third of a lease one
 * UPDATE moves all held leases' ends out again, through the fence (only
 * while the token is still this claim's), and a delivery is checked at
 * send time: one whose lease has run low is extended first, and one whose
 * lease was lost is never sent.
 */
export function createLeaseKeeper(options: LeaseKeeperOptions): LeaseKeeper {
  const { pool, clock, leaseMs, logger } = options;
  const intervalMs = options.intervalMs ?? Math.max(1, Math.floor(leaseMs / 3));
  const held = new Map<string, Held>();
  const lane = options.lane ?? createLeaseWriteLane();
  const { jobTable } = options;
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  // Send-time extensions asked for in this turn of the event loop: one statement for all.
  let asked = new Map<string, Array<(ok: boolean) => void>>();
  let flushScheduled = false;

  async function extend(ids: string[]): Promise<Set<string>> {
    const leases = ids.map((id) => held.get(id)?.lease).filter((l): l is HeldLease => l !== undefined);
    let now = clock.now();
    const extended = await lane.run(() => {
      // The lease runs from when the statement runs, not from when it was asked for.
      now = clock.now();
      return jobTable.extendLeases(pool, now, leaseMs, leases);
    });
    for (const id of extended) {
      const entry = held.get(id);
      if (entry) entry.until = now.getTime() + leaseMs;
    }
    return extended;
  }

  async function flushAsked() {
    flushScheduled = false;
    const batch = asked;
    asked = new Map();
    let extended: Set<string>;
    try {
      extended = await extend([...batch.keys()]);
    } catch (error) {
      // Unverified leases are not sent on: their results could not be written either.
      logger.warn({ err: error, count: batch.size }, "extending delivery leases failed; dropping those deliveries (their leases run out)");
      extended = new Set();
    }
    for (const [id, waiters] of batch) {
      const ok = extended.has(id);
      if (!ok) held.delete(id);
      for (const resolve of waiters) resolve(ok);
    }
  }

  async function beat() {
    if (held.size === 0) return;
    const ids = [...held.keys()];
    const startedAt = performance.now();
    let extended: Set<string>;
    try {
      extended = await extend(ids);
      // How long a heartbeat takes is what a short lease must leave room for.
      logger.debug({ count: ids.length, ms: Math.round(performance.now() - startedAt) }, "delivery leases extended");
    } catch (error) {
      logger.warn({ err: error, count: ids.length }, "extending delivery leases failed; trying again at the next heartbeat");
      return;
    }
    // Leases released while the statement ran (their results were written) are not lost.
    const lost = ids.filter((id) => !extended.has(id) && held.has(id));
    for (const id of lost) held.delete(id);
    if (lost.length > 0) options.onLost?.(lost);
  }

  /**
   * The next heartbeat is due an interval after the last one began, not after
   * it ended: a heartbeat that waited (a busy database, a busy process) must
   * not push the next one later, as the leases it renewed run from its start.
   */
  function schedule(lastStartedAt: number) {
    if (!running) return;
    const wait = Math.max(0, lastStartedAt + intervalMs - performance.now());
    timer = setTimeout(() => {
      const startedAt = performance.now();
      void beat().finally(() => schedule(startedAt));
    }, wait);
    timer.unref();
  }

  return {
    hold(lease, claimedAt) {
      held.set(lease.id, { lease, until: claimedAt.getTime() + leaseMs });
    },
    release(id) {
      held.delete(id);
    },
    ensure(id) {
      const entry = held.get(id);
      if (!entry) return Promise.resolve(false);
      // A send starts with at least half a lease ahead of it; the
      // heartbeats (every third of a lease) keep it ahead while it runs.
      if (entry.until - clock.now().getTime() >= leaseMs / 2) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const waiters = asked.get(id);
        if (waiters) waiters.push(resolve);
        else asked.set(id, [resolve]);
        if (!flushScheduled) {
          flushScheduled = true;
          setImmediate(() => void flushAsked());
        }
      });
    },
    // A stall longer than a lease (a busy machine, a heartbeat statement
    // waiting on a slow database) lets held leases run out while their
    // requests are in flight. Another process may then take them over (the
    // lease's purpose), but this process's own next claim must not: it
    // would send them a second time beside the first. Left alone, their
    // next heartbeat extends them again (the fence checks the token only).
    lapsed(now) {
      const ids: string[] = [];
      for (const [id, entry] of held) if (entry.until <= now.getTime()) ids.push(id);
      return ids;
    },
    beat,
    start() {
      if (running) return;
      running = true;
      schedule(performance.now());
    },
    stop() {
      running = false;
      clearTimeout(timer);
    },
    get size() {
      return held.size;
    },
  };
}
