import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type pg from "pg";
import type { Clock } from "../clock.js";
import type { DeliveryConfig } from "../config.js";
import type { ClaimedDelivery, DeliveryCompletion } from "../db/job-table/index.js";
import type { HealthMonitor } from "../health/health-monitor.js";
import type { Logger } from "../logger.js";
import type { DeliveryEvents } from "./delivery-events.js";
import { createDeliveryRuntime, within, type DeliveryRuntime, type DeliveryRuntimeOptions } from "./delivery-runtime.js";
import { createScheduler } from "./scheduler.js";
import { decideCompletion, releaseCompletion } from "./completion.js";
import type { TransformSandboxes } from "../sandbox/transform-sandbox.js";
import { type AnyDestination, completionOf } from "./kinds/registry.js";
import { createLogLoader } from "./call-log/log-loader.js";
import { createShapeStage } from "./shape-stage.js";

export interface DeliveryLoopOptions extends DeliveryRuntimeOptions {
  pool: pg.Pool;
  config: DeliveryConfig;
  clock: Clock;
  logger: Logger;
  /** Jitter source, for tests. */
  random?: () => number;
  /** Most deliveries one claim takes. */
  maxClaim?: number;
  /**
   * Where destinations' transforms run: the process's sandboxes, built once
   * from the config (WAYPOST_TRANSFORM_*) and shared with the API's checks.
   */
  sandboxes: TransformSandboxes;
}

export interface DeliveryLoop {
  start(): Promise<void>;
  /** Stops claiming, finishes in-flight work, hands back the rest. */
  stop(): Promise<void>;
  /** Claim now (after a clock change in tests, or a NOTIFY). */
  poke(): void;
  /** Resolves once the deliveries in flight now are finished and their results written (and operator events sent). */
  settle(): Promise<void>;
  /**
   * Resolves once the loop has taken every call stored before it was called
   * (tests): a claim started after it, and every call log cursor with calls
   * read since. Batches are not flushed: what a kind holds, or a page short
   * of its batch, waits for its time, counted from when it was taken (per
   * call) or received (on the log).
   */
  caughtUp(): Promise<void>;
  /** Moves new destinations of the batching kinds onto the call log and syncs its cursors now (with the log on; it also runs every few seconds). */
  syncCallLog(): Promise<void>;
  /** What the loop reports: results written or dropped, leases lost, claims made. */
  readonly events: DeliveryEvents;
  /** Endpoint health: the circuit gauge and operator events of this process. */
  readonly health: HealthMonitor;
}

/** A claimed delivery held here, with the destination settings it is sent with. */
interface Held {
  destinationId: string;
  job: ClaimedDelivery;
  destination: AnyDestination | undefined;
}

/**
 * The producer: claims due deliveries, never more than the scheduler has
 * room for, and runs each through shape (shape-stage.ts) → its kind's
 * deliver (kinds/) → complete (completion.ts). The
 * scheduler decides what to claim and what to start; the runtime holds the
 * collaborators (clients, writer, leases, health); this file is the loop
 * between them: run, claim, deliver, stop.
 */
export function createDeliveryLoop(options: DeliveryLoopOptions): DeliveryLoop {
  const { pool, config, clock, logger } = options;
  const runtime: DeliveryRuntime = createDeliveryRuntime(options);
  const { events, leases, writer, wakeup, settings, metrics } = runtime;
  const scheduler = createScheduler<Held>({
    config,
    maxClaim: options.maxClaim ?? 500,
    // A batching kind (a warehouse) takes a batch's worth at once.
    limitOf: (destinationId) => runtime.inFlightLimit(destinationId),
  });
  const { sandboxes } = options;
  const { jobTable } = options;
  const shape = createShapeStage({
    pool,
    clock,
    metrics: options.metrics,
    sandboxes,
    finish: (completion) => writer.add(completion),
    labelOf: (destination) => runtime.labelOf(destination),
  });
  // Destinations of the batching kinds read the call log by cursor (call-log/), beside this loop's per-call claims.
  // With the log off, destinations already on it are still read: only moving more onto it stops.
  const loader = jobTable.callLog
    ? createLogLoader({
        pool,
        runtime,
        config,
        sandboxes,
        clock,
        logger,
        notifier: options.notifier,
        moveOntoLog: config.callLog === true,
        onQueued: () => wakeup.wake(),
        recordHealth: (tx, completions) => runtime.recordHealth(tx, completions),
        onCompleted: (completions) => {
          for (const c of completions) {
            metrics.attempted(c.destinationId, c.attempts);
            metrics.finished(c.destinationId, c.status);
          }
          events.emit("completed", [...completions]);
        },
      })
    : undefined;
  const owner = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  const active = new Set<Promise<void>>();
  let running = false;
  // When a rate-limited destination will have tokens again (ms, from the last claim).
  let refillWaitMs: number | undefined;
  let loopDone: Promise<void> = Promise.resolve();

  /** One claim; true when it came back full (more may be due at once). */
  async function claimOnce(): Promise<boolean> {
    const plan = scheduler.planClaim();
    if (!plan) return false;
    const now = clock.now().getTime();
    for (const destinationId of shape.backingOff(now)) plan.room.set(destinationId, 0);
    const startedAt = performance.now();
    const claimedAt = clock.now();
    const claim = await jobTable.claimDeliveries(pool, {
      now: claimedAt,
      leaseMs: config.leaseMs,
      owner,
      // Held here still, their leases run out: never taken back by this process.
      keep: leases.lapsed(claimedAt),
      ...plan,
    });
    const jobs = claim.deliveries;
    refillWaitMs = claim.refillWaitMs;
    for (const job of jobs) leases.hold(job, claimedAt);
    if (jobs.length > 0) await settings.refresh(jobs);
    const held = jobs.map((job) => ({ destinationId: job.destinationId, job, destination: settings.get(job.destinationId) }));
    const { start, full } = scheduler.accept(held, plan);
    metrics.inFlight(held.length);
    for (const item of start) begin(item);
    events.emit("claimed", { count: jobs.length, startedAt });
    return full;
  }

  function begin(item: Held) {
    const work = deliver(item).finally(() => {
      active.delete(work);
      metrics.inFlight(-1);
      const { next, claimAhead } = scheduler.finished(item.destinationId);
      if (next) begin(next);
      // Wakes while a claim runs fold into one: not a claim per completion.
      if (claimAhead) wakeup.wake();
    });
    active.add(work);
  }

  async function deliver({ job, destination }: Held): Promise<void> {
    try {
      if (!destination?.enabled) {
        // Deleted: its deliveries are cancelled; disabled: handed back, paused.
        writer.add(releaseCompletion(job, clock.now(), destination ? "release" : "cancelled"));
        return;
      }
      // The destination's rules of this moment (dropped fields, transform) shape what is delivered, whatever its kind.
      let body = job.payload;
      // Not awaited without rules: the call reaches its kind in the same turn as its claim.
      if (shape.applies(destination)) {
        const shaped = await shape.shape(job, destination);
        if (shaped === undefined) return;
        body = shaped;
      }
      // Claimed ahead, it may have waited rounds here: never send on a lost lease.
      if (!(await leases.ensure(job.id))) {
        logger.info({ deliveryId: job.id }, "delivery dropped unsent: its lease moved on while it waited here");
        events.emit("lost", [job.id]);
        return;
      }
      // Which settings the attempt was made with, and the body when the rules changed it.
      const sentBody = body === job.payload ? undefined : body;
      const results = await runtime.deliver(job, destination, body);
      // Set in place (the kind's results are this delivery's own): a copy
      // of each result per webhook was one of the loop's larger costs.
      for (const r of results) {
        r.destinationRevision = destination.revision;
        r.sentBody = sentBody;
      }
      metrics.attempted(job.destinationId, results);
      writer.add(decideCompletion(job, results, completionOf(destination), clock.now(), config.retry, options.random));
    } catch (error) {
      // A bug here must not lose the delivery: hand it back for another try.
      logger.error({ err: error, deliveryId: job.id }, "delivery processing failed; releasing it");
      writer.add(releaseCompletion(job, clock.now(), "release"));
    }
  }

  async function run() {
    while (running) {
      let full = false;
      try {
        full = await claimOnce();
      } catch (error) {
        logger.error({ err: error }, "claiming deliveries failed");
      }
      // A destination short of tokens claims nothing and holds no slot here;
      // the loop comes back when its bucket has refilled.
      const waitMs = refillWaitMs === undefined ? config.pollIntervalMs : Math.min(config.pollIntervalMs, Math.ceil(refillWaitMs));
      if (!full && running) await wakeup.wait(waitMs);
      runtime.tick();
    }
  }

  return {
    events,
    health: runtime.health,
    async start() {
      running = true;
      await runtime.start();
      loopDone = run();
      await loader?.start();
    },
    poke: () => {
      wakeup.wake();
      loader?.wake();
    },
    syncCallLog: async () => loader?.sync(),
    async caughtUp() {
      const mark = performance.now();
      const claimed = new Promise<void>((resolve) => {
        const off = events.on("claimed", ({ startedAt }) => {
          if (startedAt < mark) return;
          off();
          resolve();
        });
      });
      wakeup.wake();
      await claimed;
      await loader?.idle({ flush: false });
    },
    async settle() {
      await loader?.idle();
      // Batches a kind holds are loaded now rather than at their flush time.
      runtime.flush();
      await Promise.allSettled([...active]);
      await runtime.settle();
    },
    async stop() {
      // Shutdown must end even while the database is away: whatever is not
      // written by the deadline is dropped, and its leases expire.
      const deadline = Date.now() + config.shutdownTimeoutMs;
      const left = () => Math.max(0, deadline - Date.now());
      running = false;
      wakeup.wake();
      await within(loopDone, left());
      if (loader) await within(loader.stop(), left());
      const waiting = scheduler.drainWaiting();
      metrics.inFlight(-waiting.length);
      for (const { job } of waiting) writer.add(releaseCompletion(job, clock.now(), "release"));
      runtime.flush();
      await within(Promise.allSettled([...active]), left());
      await runtime.close(left);
    },
  };
}

export type { DeliveryCompletion };
