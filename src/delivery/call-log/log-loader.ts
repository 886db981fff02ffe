import { createLeasedWorker, type LeasedWorker, type LeaseSource } from "../../background/leased-worker.js";
import type { Notifier } from "../../background/notifier.js";
import {
  claimLogCursor,
  cursorKey,
  extendLogCursor,
  type LogCursor,
  moveOntoLog,
  releaseLogCursor,
  syncLogCursors,
} from "../../db/call-log/log-cursors.js";
import { selectDestinationsToMove, selectLogRoute } from "../../db/call-log/log-destinations.js";
import { deliveriesChannel } from "../../db/job-table/index.js";
import { compileRouteRules, type RouteRules } from "../../routing/route-rules.js";
import { loadDestinations } from "../destination-settings.js";
import { matcherOfRow } from "../kinds/registry.js";
import { type CursorRunContext, runCursor } from "./cursor-run.js";
import { createDeferrals } from "./deferrals.js";

/** What the loader hands each cursor's run (cursor-run.ts), and what it needs beside. */
export interface LogLoaderOptions
  extends Pick<
    CursorRunContext,
    "pool" | "runtime" | "config" | "sandboxes" | "clock" | "logger" | "onQueued" | "onCompleted" | "recordHealth"
  > {
  notifier?: Notifier | undefined;
  /** Calls read per page (1,000 by default). */
  pageSize?: number;
  /** Cursors worked here at once (4 by default). */
  concurrency?: number;
  /** Real time between moves of new batching destinations onto the log and cursor syncs (5 s by default). */
  syncMs?: number;
  /**
   * Per-call destinations of the batching kinds are moved onto the log
   * (WAYPOST_CALL_LOG=on). Off, those already on it are still read: there is
   * no way back to a queue row per call for calls past a cursor.
   */
  moveOntoLog?: boolean;
}

export interface LogLoader {
  start(): Promise<void>;
  /** Look for calls now (after ingest, or a test's clock change). */
  wake(): void;
  /**
   * Reads every cursor with calls now and resolves when none is worked here
   * and none has calls to read: by default sending what there is, however
   * few; with `flush: false` a page short of its kind's batch still waits
   * for its time (tests: the calls stored so far have been read).
   */
  idle(options?: { flush?: boolean }): Promise<void>;
  /** Moves batching destinations onto the log and syncs cursors now (tests; also every syncMs). */
  sync(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The call log's loader: one leased worker over the cursors of destinations
 * on the log. A cursor's work reads the next page of its source's calls,
 * routes and delivers it (log-page.ts) and moves the cursor in one
 * statement with what the page left behind, page after page until it has
 * read everything safe to read. The lease fence makes one process at a time
 * deliver a cursor's pages; a process that dies between a send and the
 * cursor's move leaves the cursor where it was, and the next holder sends
 * the same page again (each kind's batch is idempotent by its calls).
 */
export function createLogLoader(options: LogLoaderOptions): LogLoader {
  const { pool, config, clock, logger } = options;
  const pageSize = options.pageSize ?? 1_000;
  const rulesCache = new Map<string, { revision: number; rules: RouteRules }>();

  let flushing = false;
  const deferrals = createDeferrals({ clock, onDue: () => worker.wake() });

  const lease: LeaseSource<LogCursor> = {
    leaseMs: config.leaseMs,
    claim: (token, now, prefer) => claimLogCursor(pool, token, now, config.leaseMs, prefer, flushing ? [] : deferrals.waiting()),
    keyOf: cursorKey,
    extend: (cursor, token, now) => extendLogCursor(pool, cursor, token, now, config.leaseMs),
    release: (cursor, token) => releaseLogCursor(pool, cursor, token),
  };

  async function rulesOf(destinationId: string, revision: number): Promise<RouteRules | undefined> {
    const cached = rulesCache.get(destinationId);
    if (cached && cached.revision === revision) return cached.rules;
    const row = await selectLogRoute(pool, destinationId);
    if (!row) return undefined;
    const rules = compileRouteRules({
      filter: row.filter,
      consentCategories: row.consent_categories,
      requireConsent: row.require_consent,
      matcher: matcherOfRow(row),
    });
    rulesCache.set(destinationId, { revision: row.revision, rules });
    return rules;
  }

  const run: CursorRunContext = {
    pool,
    runtime: options.runtime,
    config,
    sandboxes: options.sandboxes,
    clock,
    logger,
    pageSize,
    async destinationOf(id) {
      const destination = (await loadDestinations(pool, [id])).get(id);
      const rules = destination && (await rulesOf(id, destination.revision));
      return destination && rules ? { destination, rules } : undefined;
    },
    recordHealth: options.recordHealth,
    onQueued: options.onQueued,
    onCompleted: options.onCompleted,
    flushing: () => flushing,
    markCalls: () => deferrals.mark(),
    defer: (cursor, untilMs, mark) => deferrals.defer(cursorKey(cursor), untilMs, mark),
  };

  const worker: LeasedWorker = createLeasedWorker({
    lease,
    name: "call log cursor",
    concurrency: options.concurrency ?? 4,
    pollMs: config.pollIntervalMs,
    clock,
    logger,
    work: (cursor, token, held) => runCursor(run, cursor, token, held),
  });

  async function sync(): Promise<void> {
    const toMove = options.moveOntoLog === false ? [] : await selectDestinationsToMove(pool);
    if (toMove.length > 0) {
      await moveOntoLog(pool, toMove, clock.now());
      logger.info({ destinations: toMove.length }, "destinations moved onto the call log");
    } else await syncLogCursors(pool);
  }

  let timer: NodeJS.Timeout | undefined;
  let syncing: Promise<void> = Promise.resolve();
  const syncSoon = () => {
    syncing = syncing
      .then(sync)
      .then(() => worker.wake())
      .catch((error) => logger.warn({ err: error }, "syncing the call log's cursors failed"));
  };

  /** New calls (ingest's wake-up of the delivery loops): cursors waiting for a batch to fill look again. */
  const onCalls = () => {
    deferrals.clear();
    worker.wake();
  };
  const unsubscribe: Array<() => void> = [];

  return {
    async start() {
      await sync();
      if (options.notifier) {
        unsubscribe.push(options.notifier.subscribe(deliveriesChannel, onCalls), options.notifier.onReady(onCalls));
        await options.notifier.settled();
      }
      await worker.start();
      timer = setInterval(syncSoon, options.syncMs ?? 5_000);
      timer.unref();
    },
    wake: onCalls,
    async idle({ flush = true } = {}) {
      if (flush) flushing = true;
      deferrals.clear();
      worker.wake();
      try {
        await worker.idle();
      } finally {
        if (flush) flushing = false;
      }
    },
    async sync() {
      syncSoon();
      await syncing;
    },
    async stop() {
      clearInterval(timer);
      for (const off of unsubscribe.splice(0)) off();
      deferrals.close();
      await syncing;
      await worker.stop();
    },
  };
}
