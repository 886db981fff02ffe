import { randomUUID } from "node:crypto";
import { type Clock, systemClock } from "../clock.js";
import type { Logger } from "../logger.js";
import type { Notifier } from "./notifier.js";

/**
 * Work stored in Postgres that one process at a time holds under a lease:
 * a background job, a webhook source's pending requests. Every write of
 * the holder is fenced by the lease's token, so a process whose lease ran
 * out (and was taken over) cannot write over its successor.
 */
export interface LeaseSource<T> {
  /** How long a lease lasts: after it, another process may take the item over. The worker extends it every third of it. */
  readonly leaseMs: number;
  /** Leases an item nobody holds (new, released, or whose holder let its lease run out) under `token`; `prefer` is a key to take first if it is free. */
  claim(token: string, now: Date, prefer?: string): Promise<T | undefined>;
  /** The item's identity: one item is worked at most once at a time here, and wake(key) prefers it. */
  keyOf(item: T): string;
  /** The heartbeat; false when the item is no longer held under `token` (taken over, cancelled, ended). */
  extend(item: T, token: string, now: Date): Promise<boolean>;
  /** Gives the item up (its work is done, or the worker stops): another process may take it at once. A no-op when it is no longer held. */
  release(item: T, token: string): Promise<void>;
}

export interface LeasedWorkerOptions<T> {
  lease: LeaseSource<T>;
  /**
   * Works one leased item, a page at a time, until it is done. `held()`
   * turns false when the lease was lost or the worker is stopping: check it
   * between pages and return. The worker releases the item afterwards.
   */
  work(item: T, token: string, held: () => boolean): Promise<void>;
  /** What the items are, for the logs ("background job", "webhook source"). */
  name: string;
  /** Items worked here at once (4 by default). */
  concurrency?: number;
  /** Real time between looks for items nobody holds (1 s by default); wake() and notifications look at once. */
  pollMs?: number;
  /** A notifier topic whose NOTIFY (payload: an item's key, or empty) wakes the worker; and after the notifier reconnects it looks. */
  topic?: string;
  notifier?: Notifier | undefined;
  /** Lease times follow this clock (tests move it past a lease at once); the system clock by default. */
  clock?: Clock;
  logger: Logger;
}

export interface LeasedWorker {
  /** Subscribes to the topic (once it is listened on) and starts polling. */
  start(): Promise<void>;
  /** Look now, taking the item of `key` first when it is free (an item was just stored or created). */
  wake(key?: string): void;
  /** Resolves when no item is worked here and none is free to take (tests). */
  idle(): Promise<void>;
  /** Stops at the next page boundary; the items held are released for another process. */
  stop(): Promise<void>;
}

/**
 * The one way a process picks up leased background work: it claims items
 * while it has room (one claim at a time; a wake-up during a look makes it
 * look again after), works each with a heartbeat at a third of the lease,
 * and releases it when its work returns. A claim that fails, or work that
 * throws, is logged and left to the next look (or the lease running out);
 * the poll timer is the fallback for every wake-up missed.
 */
export function createLeasedWorker<T>(options: LeasedWorkerOptions<T>): LeasedWorker {
  const { lease, logger, name } = options;
  const clock = options.clock ?? systemClock;
  const concurrency = options.concurrency ?? 4;
  const pollMs = options.pollMs ?? 1_000;
  const working = new Map<string, Promise<void>>();
  /** Keys woken for: claimed first when free. */
  const wanted = new Set<string>();
  const unsubscribe: Array<() => void> = [];
  let timer: NodeJS.Timeout | undefined;
  let stopping = false;
  let looking: Promise<void> | undefined;
  let lookAgain = false;

  /** Claims items while there is room; runs once at a time (a wake during it looks again after). */
  function look(): Promise<void> {
    if (looking) {
      lookAgain = true;
      return looking;
    }
    looking = (async () => {
      do {
        lookAgain = false;
        while (!stopping && working.size < concurrency) {
          const token = randomUUID();
          const preferred = [...wanted].find((key) => !working.has(key));
          if (preferred !== undefined) wanted.delete(preferred);
          const item = await lease.claim(token, clock.now(), preferred);
          if (item === undefined) break;
          const key = lease.keyOf(item);
          const run = hold(item, key, token).finally(() => {
            working.delete(key);
            // Room for another: one may be waiting.
            if (!stopping) void look();
          });
          working.set(key, run);
        }
      } while (lookAgain && !stopping);
    })()
      .catch((error: unknown) => logger.warn({ err: error }, `looking for a ${name} to work failed; trying again shortly`))
      .finally(() => (looking = undefined));
    return looking;
  }

  /** Works the item under a heartbeat, then gives it up; never throws. */
  async function hold(item: T, key: string, token: string): Promise<void> {
    let held = true;
    const heartbeat = setInterval(
      () => {
        lease
          .extend(item, token, clock.now())
          .then((ok) => (held &&= ok))
          .catch((error: unknown) => logger.warn({ err: error, key }, `a ${name}'s lease heartbeat failed`));
      },
      Math.max(1, Math.floor(lease.leaseMs / 3)),
    );
    heartbeat.unref();
    try {
      await options.work(item, token, () => held && !stopping);
    } catch (error) {
      logger.warn({ err: error, key }, `working a ${name} stopped on an error; it is taken again shortly`);
    } finally {
      clearInterval(heartbeat);
    }
    try {
      await lease.release(item, token);
      if (stopping) logger.info({ key }, `${name} released at shutdown; another process goes on with it`);
    } catch (error) {
      logger.warn({ err: error, key }, `releasing a ${name} failed; its lease runs out`);
    }
  }

  function wake(key?: string): void {
    if (stopping) return;
    if (key) wanted.add(key);
    void look();
  }

  return {
    async start() {
      const { notifier, topic } = options;
      if (notifier && topic !== undefined) {
        unsubscribe.push(notifier.subscribe(topic, (payload) => wake(payload)));
        // Work stored while the connection was down was announced to nobody.
        unsubscribe.push(notifier.onReady(() => wake()));
        await notifier.settled();
      }
      timer = setInterval(() => void look(), pollMs);
      timer.unref();
      void look();
    },
    wake,
    async idle() {
      for (;;) {
        await look();
        if (working.size === 0) return;
        await Promise.all([...working.values()]);
      }
    },
    async stop() {
      stopping = true;
      if (timer) clearInterval(timer);
      for (const off of unsubscribe.splice(0)) off();
      await looking;
      await Promise.all([...working.values()]);
    },
  };
}
