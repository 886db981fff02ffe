import type pg from "pg";
import { createLeasedWorker, type LeasedWorker, type LeaseSource } from "../../background/leased-worker.js";
import type { Notifier } from "../../background/notifier.js";
import type { Call } from "../../calls/call.js";
import type { Clock } from "../../clock.js";
import {
  claimHookSource,
  lockHookLease,
  recordHookOutcomes,
  releaseHookLease,
  selectHookSettingsJson,
  selectPendingHookRequests,
  type HookRequestOutcome,
} from "../../db/queries/hook-requests.js";
import { withTransaction, type Queryable } from "../../db/pool.js";
import type { Logger } from "../../logger.js";
import type { Metrics } from "../../metrics.js";
import type { TransformSandboxes } from "../../sandbox/transform-sandbox.js";
import { hooksChannel, notifyHookSources } from "../../db/queries/hook-notify.js";
import type { Ingestor } from "../ingestor.js";
import { callsOfHookRequest, hookSandboxKey } from "./hook-calls.js";
import { readProcessingSettings } from "./hook-input.js";
import { RefusedCall, storeHookPageCalls } from "./hook-page-store.js";

/** Tells every process's processor (this one's too) that the source has a new pending request; send it after the commit. */
export async function notifyHookRequestStored(db: Queryable, sourceId: string): Promise<void> {
  await notifyHookSources(db, [sourceId]);
}

export interface HookProcessorOptions {
  pool: pg.Pool;
  /** The process's notifier: a NOTIFY on the hooks channel wakes the processor; absent: wake() and polling only. */
  notifier?: Notifier | undefined;
  clock: Clock;
  logger: Logger;
  ingestor: Ingestor;
  sandboxes: TransformSandboxes;
  /** A source's lease (WAYPOST_LEASE_MS): after it, another process takes the source over. */
  leaseMs: number;
  /** Real time between looks for sources with pending requests (1 s by default); wake() looks at once. */
  pollMs?: number;
  /** Requests taken and committed together (200 by default). */
  pageSize?: number;
  /** Sources worked at once (4 by default). */
  concurrency?: number;
  /** Counts each request's outcome (waypost_hook_requests_processed_total). */
  metrics?: Metrics | undefined;
  /** After a commit that stored calls: wake the delivery loops (the ingestor's own wake-up comes before the commit). */
  onQueued?: (() => void) | undefined;
}

/** wake(sourceId) after a request of the source was stored; stop() ends after the page being written. */
export type HookProcessor = LeasedWorker;

/**
 * Turns webhook sources' stored requests into calls. Any process that
 * delivers runs one: it leases a source with pending requests (a lease
 * nobody holds, or one whose holder died and let it run out), takes its
 * pending requests in order of receipt a page at a time, makes each
 * request's calls (its transform in the source's sandbox, or the default
 * mapping), and commits them through the ingest path (filters, fates,
 * plans, deliveries) together with each request's outcome, in one
 * transaction fenced by the lease. A crash before the commit leaves the
 * page pending for the next holder; the derived messageIds make a page run
 * twice store its calls once.
 */
export function createHookProcessor(options: HookProcessorOptions): HookProcessor {
  const { pool, clock, logger, leaseMs } = options;
  const pageSize = options.pageSize ?? 200;
  /** The sandbox key each source's transform last ran under: the old one is freed when the transform changes. */
  const sandboxKeys = new Map<string, string>();

  // A lease's item is the source's id.
  const sources: LeaseSource<string> = {
    leaseMs,
    claim: (leaseId, now, preferred) => claimHookSource(pool, leaseId, now, leaseMs, preferred),
    keyOf: (sourceId) => sourceId,
    extend: (sourceId, leaseId, now) => lockHookLease(pool, sourceId, leaseId, now, leaseMs),
    release: (sourceId, leaseId) => releaseHookLease(pool, sourceId, leaseId),
  };

  /** One page of the source's pending requests; false when there was none (or the lease is gone). */
  async function page(sourceId: string, leaseId: string): Promise<boolean> {
    const json = await selectHookSettingsJson(pool, sourceId);
    // Deleted (its requests go with it) or no longer a webhook source.
    if (!json) return false;
    const settings = readProcessingSettings(json);
    const rows = await selectPendingHookRequests(pool, sourceId, "0", pageSize);
    if (rows.length === 0) return false;
    const key = hookSandboxKey(sourceId, settings.transform);
    const previousKey = sandboxKeys.get(sourceId);
    if (previousKey !== undefined && previousKey !== key) options.sandboxes.forget(previousKey);
    sandboxKeys.set(sourceId, key);
    const made = await Promise.all(rows.map((row) => callsOfHookRequest(row, settings, key, options)));
    const outcomes: HookRequestOutcome[] = rows.map((row, i) => {
      const result = made[i]!;
      return result.ok
        ? { id: row.id, status: "processed", error: null, messageIds: result.calls.map((c) => c.messageId) }
        : { id: row.id, status: "failed", error: result.error, messageIds: [] };
    });
    const calls = new Map(rows.map((row, i) => [row.id, made[i]!.ok ? (made[i] as { calls: Call[] }).calls : []]));
    // A call the ingest path refuses (the source's tracking plan blocks
    // it, say) fails its request: the page is written again without it.
    for (let attempt = 0; attempt <= rows.length; attempt++) {
      const written = await withTransaction(pool, async (tx) => {
        if (!(await lockHookLease(tx, sourceId, leaseId, clock.now(), leaseMs))) return "lost" as const;
        // A refused call throws, so the calls stored before it are rolled back.
        await storeHookPageCalls(options.ingestor, tx, sourceId, { rows, outcomes, calls });
        await recordHookOutcomes(tx, outcomes, clock.now());
        return "done" as const;
      }).catch((error: unknown) => {
        if (error instanceof RefusedCall) return { requestId: error.requestId, error: error.reason };
        throw error;
      });
      if (written === "lost") return false;
      if (written === "done") {
        report(sourceId, outcomes);
        return true;
      }
      const outcome = outcomes.find((o) => o.id === written.requestId)!;
      Object.assign(outcome, { status: "failed", error: written.error, messageIds: [] });
      calls.set(written.requestId, []);
    }
    return true;
  }

  /** After a page's commit: wake the delivery loops, count and log the outcomes. */
  function report(sourceId: string, outcomes: readonly HookRequestOutcome[]): void {
    if (outcomes.some((o) => o.status === "processed" && o.messageIds.length > 0)) options.onQueued?.();
    const failed = outcomes.filter((o) => o.status === "failed");
    const counter = options.metrics?.hookRequestsProcessed;
    if (counter && failed.length > 0) counter.inc({ source_id: sourceId, status: "failed" }, failed.length);
    if (counter && failed.length < outcomes.length)
      counter.inc({ source_id: sourceId, status: "processed" }, outcomes.length - failed.length);
    if (failed.length > 0) logger.info({ sourceId, failed: failed.map((o) => ({ id: o.id, error: o.error })) }, "webhook requests failed");
  }

  const worker = createLeasedWorker({
    lease: sources,
    async work(sourceId, leaseId, held) {
      // Then released, even after a failure: the next look (a second away) takes it again.
      while (held() && (await page(sourceId, leaseId)));
    },
    name: "webhook source",
    concurrency: options.concurrency,
    pollMs: options.pollMs,
    topic: hooksChannel,
    notifier: options.notifier,
    clock,
    logger,
  });
  return {
    ...worker,
    async stop() {
      await worker.stop();
      for (const key of sandboxKeys.values()) options.sandboxes.forget(key);
    },
  };
}
