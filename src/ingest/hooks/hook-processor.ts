import { randomUUID } from "node:crypto";
import pg from "pg";
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
  type HookRequestRow,
} from "../../db/queries/hook-requests.js";
import { withTransaction, type Queryable } from "../../db/pool.js";
import type { Logger } from "../../logger.js";
import type { Metrics } from "../../metrics.js";
import type { TransformSandboxes } from "../../sandbox/transform-sandbox.js";
import { parseTraceparent, type TraceContext } from "../../tracing/trace-context.js";
import { listenForHookRequests, notifyHookSources } from "../../db/queries/hook-notify.js";
import type { Ingestor } from "../ingestor.js";
import { callsOfHookRequest, hookSandboxKey, maxHookCallBytes } from "./hook-calls.js";
import { readProcessingSettings } from "./hook-input.js";

/** Tells every process's processor (this one's too) that the source has a new pending request; send it after the commit. */
export async function notifyHookRequestStored(db: Queryable, sourceId: string): Promise<void> {
  await notifyHookSources(db, [sourceId]);
}

export interface HookProcessorOptions {
  pool: pg.Pool;
  /** For the LISTEN connection (not from the pool); absent: wake() and polling only. */
  connectionString?: string | undefined;
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

export interface HookProcessor {
  start(): Promise<void>;
  /** A request of the source was just stored: look now (the inbound route calls it after its commit). */
  wake(sourceId?: string): void;
  /** Resolves when no source is being worked here and none with pending requests is free to take (tests). */
  idle(): Promise<void>;
  /** Stops after the page being written; the sources held are released for another process. */
  stop(): Promise<void>;
}

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
  const { pool, clock, logger } = options;
  const pollMs = options.pollMs ?? 1_000;
  const pageSize = options.pageSize ?? 200;
  const concurrency = options.concurrency ?? 4;
  const working = new Map<string, Promise<void>>();
  /** The sandbox key each source's transform last ran under: the old one is freed when the transform changes. */
  const sandboxKeys = new Map<string, string>();
  const wanted = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let listener: pg.Client | undefined;
  let reconnect: NodeJS.Timeout | undefined;
  let stopping = false;
  let looking: Promise<void> | undefined;
  let lookAgain = false;

  function look(): Promise<void> {
    if (looking) {
      lookAgain = true;
      return looking;
    }
    looking = (async () => {
      do {
        lookAgain = false;
        while (!stopping && working.size < concurrency) {
          const leaseId = randomUUID();
          const preferred = [...wanted].find((id) => !working.has(id));
          if (preferred) wanted.delete(preferred);
          const sourceId = await claimHookSource(pool, leaseId, clock.now(), options.leaseMs, preferred);
          if (!sourceId) break;
          const run = work(sourceId, leaseId)
            .catch((error: unknown) =>
              logger.warn({ err: error, sourceId }, "processing a webhook source's requests failed; trying again shortly"),
            )
            .finally(() => {
              working.delete(sourceId);
              if (!stopping) void look();
            });
          working.set(sourceId, run);
        }
      } while (lookAgain && !stopping);
    })()
      .catch((error: unknown) => logger.warn({ err: error }, "looking for webhook requests to process failed; trying again shortly"))
      .finally(() => (looking = undefined));
    return looking;
  }

  async function work(sourceId: string, leaseId: string): Promise<void> {
    let held = true;
    const heartbeat = setInterval(
      () => {
        lockHookLease(pool, sourceId, leaseId, clock.now(), options.leaseMs)
          .then((ok) => (held &&= ok))
          .catch((error: unknown) => logger.warn({ err: error, sourceId }, "a webhook source's lease heartbeat failed"));
      },
      Math.max(1, Math.floor(options.leaseMs / 3)),
    );
    heartbeat.unref();
    try {
      while (!stopping && held) {
        const more = await page(sourceId, leaseId);
        if (!more) break;
      }
    } finally {
      clearInterval(heartbeat);
      // Given up even after a failure: the next look (a second away) takes it again.
      await releaseHookLease(pool, sourceId, leaseId).catch((error: unknown) =>
        logger.warn({ err: error, sourceId }, "releasing a webhook source's lease failed; it runs out"),
      );
    }
  }

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
        if (!(await lockHookLease(tx, sourceId, leaseId, clock.now(), options.leaseMs))) return "lost" as const;
        const refused = await storeCalls(tx, sourceId, rows, outcomes, calls);
        // Thrown, so the calls stored before it are rolled back.
        if (refused) throw new RefusedCall(refused.requestId, refused.error);
        await recordHookOutcomes(tx, outcomes, clock.now());
        return "done" as const;
      }).catch((error: unknown) => {
        if (error instanceof RefusedCall) return { requestId: error.requestId, error: error.reason };
        throw error;
      });
      if (written === "lost") return false;
      if (written === "done") {
        if (outcomes.some((o) => o.status === "processed" && o.messageIds.length > 0)) options.onQueued?.();
        const failed = outcomes.filter((o) => o.status === "failed");
        if (options.metrics) {
          const counter = options.metrics.hookRequestsProcessed;
          if (failed.length > 0) counter.inc({ source_id: sourceId, status: "failed" }, failed.length);
          if (failed.length < outcomes.length) counter.inc({ source_id: sourceId, status: "processed" }, outcomes.length - failed.length);
        }
        if (failed.length > 0)
          logger.info({ sourceId, failed: failed.map((o) => ({ id: o.id, error: o.error })) }, "webhook requests failed");
        return true;
      }
      const outcome = outcomes.find((o) => o.id === written.requestId)!;
      Object.assign(outcome, { status: "failed", error: written.error, messageIds: [] });
      calls.set(written.requestId, []);
    }
    return true;
  }

  /**
   * Stores the calls of the page's processed requests, consecutive ones
   * with the same trace context in one ingest; a refused call rolls the
   * transaction back and names its request.
   */
  async function storeCalls(
    tx: pg.PoolClient,
    sourceId: string,
    rows: readonly HookRequestRow[],
    outcomes: readonly HookRequestOutcome[],
    calls: ReadonlyMap<string, Call[]>,
  ): Promise<{ requestId: string; error: string } | undefined> {
    let group: { trace: TraceContext | undefined; calls: Call[]; owners: Array<[string, number]> } | undefined;
    const flush = async () => {
      if (!group || group.calls.length === 0) return undefined;
      const result = await options.ingestor.ingest(sourceId, group.calls, { db: tx, trace: group.trace, maxCallBytes: maxHookCallBytes });
      const first = result.rejected[0];
      if (!first) return undefined;
      const [requestId, index] = group.owners[first.index]!;
      return { requestId, error: `call ${index}: ${first.reason}` };
    };
    for (const [i, row] of rows.entries()) {
      if (outcomes[i]!.status !== "processed") continue;
      const trace = traceOf(row);
      if (!group || group.trace?.traceparent !== trace?.traceparent || group.trace?.tracestate !== trace?.tracestate) {
        const refused = await flush();
        if (refused) return refused;
        group = { trace, calls: [], owners: [] };
      }
      for (const [index, call] of (calls.get(row.id) ?? []).entries()) {
        group.calls.push(call);
        group.owners.push([row.id, index]);
      }
    }
    return flush();
  }

  /** LISTENs on its own connection; a lost one is made again a second later (polling covers the gap). */
  async function listen(): Promise<void> {
    if (!options.connectionString || stopping) return;
    const client = new pg.Client({ connectionString: options.connectionString, application_name: "waypost-hooks-listen" });
    client.on("notification", (message) => wake(message.payload));
    const retry = (error: unknown, what: string) => {
      logger.warn({ err: error }, `${what}; polling every second until it is back`);
      client.end().catch(() => {});
      if (listener === client) listener = undefined;
      if (!stopping && !reconnect) {
        reconnect = setTimeout(() => {
          reconnect = undefined;
          void listen();
        }, 1_000);
        reconnect.unref();
      }
    };
    client.on("error", (error) => retry(error, "the webhook requests' LISTEN connection failed"));
    try {
      await client.connect();
      await listenForHookRequests(client);
      if (stopping) {
        await client.end();
        return;
      }
      listener = client;
      // Requests stored while it was not listening.
      void look();
    } catch (error) {
      retry(error, "LISTEN for webhook requests failed");
    }
  }

  function wake(sourceId?: string): void {
    if (stopping) return;
    if (sourceId) wanted.add(sourceId);
    void look();
  }

  return {
    async start() {
      await listen();
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
      if (reconnect) clearTimeout(reconnect);
      await looking;
      await Promise.all([...working.values()]);
      await listener?.end().catch(() => {});
      for (const key of sandboxKeys.values()) options.sandboxes.forget(key);
    },
  };
}

/** A call the ingest path refused, naming its request: rolls the page's transaction back. */
class RefusedCall extends Error {
  constructor(
    readonly requestId: string,
    readonly reason: string,
  ) {
    super(reason);
  }
}

/** The request's trace context, when it carried a valid one. */
function traceOf(row: HookRequestRow): TraceContext | undefined {
  if (!row.traceparent || !parseTraceparent(row.traceparent)) return undefined;
  return { traceparent: row.traceparent, tracestate: row.tracestate ?? undefined };
}
