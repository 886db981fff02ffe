import type pg from "pg";
import type { Dispatcher } from "undici";
import type { Notifier } from "../background/notifier.js";
import type { Clock } from "../clock.js";
import type { DeliveryConfig, OperatorWebhookConfig, OutboundConfig } from "../config.js";
import type { JobTableDriver, AttemptResult, ClaimedDelivery, DeliveryCompletion } from "../db/job-table/index.js";
import type { Transition } from "../health/circuit.js";
import { createHealthMonitor, type HealthMonitor } from "../health/health-monitor.js";
import { recordHealth } from "../health/record-health.js";
import type { Queryable } from "../db/pool.js";
import { createOperatorEvents } from "../health/operator-events.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics.js";
import { tracingOff, type Tracing } from "../tracing/tracing.js";
import { type AddressGuard, createAddressGuard } from "../outbound/address-guard.js";
import { createHttpClient } from "../outbound/http-client.js";
import { createCompletionWriter, type CompletionWriter } from "./completion-writer.js";
import { createDeliveryEvents, type DeliveryEventEmitter } from "./delivery-events.js";
import { createDeliveryMetrics, type DeliveryMetrics } from "./delivery-metrics.js";
import { createDestinationDispatchers } from "./destination-dispatchers.js";
import { createDestinationSettings, loadDestinations, type DestinationSettings } from "./destination-settings.js";
import { createLeaseKeeper, type LeaseKeeper } from "./lease-keeper.js";
import { createWakeup, type Wakeup } from "./wakeup.js";
import { createLeaseWriteLane } from "./lease-write-lane.js";
import { traceDelivery } from "./kinds/attempt-spans.js";
import { succeededParts } from "../db/queries/succeeded-parts.js";
import type { EarlierAttempts, KindDelivery } from "./kinds/kind.js";
import { type AnyDestination, completionOf, kindOf, registeredKinds } from "./kinds/registry.js";

export interface DeliveryRuntimeOptions {
  pool: pg.Pool;
  /** The process's notifier: a NOTIFY on the deliveries' channel wakes the loop; absent, it polls (tests of the loop alone). */
  notifier?: Notifier | undefined;
  config: DeliveryConfig;
  clock: Clock;
  logger: Logger;
  metrics?: Metrics | undefined;
  /** Outbound HTTP for every destination; by default each destination gets a guarded undici client of its own. */
  dispatcher?: Dispatcher | undefined;
  /** Extra trusted CAs for the default clients, beside the system roots. */
  ca?: string | string[] | undefined;
  /** Proxies, NO_PROXY and NODE_EXTRA_CA_CERTS for the default clients; absent: direct. */
  outbound?: OutboundConfig | undefined;
  /** Where operator events (circuit opened/closed, deliveries expired) are POSTed; unset: only logged. */
  operatorWebhook?: OperatorWebhookConfig | undefined;
  /** The process's address guard; one is built from the config when absent (tests of the loop alone). */
  guard?: AddressGuard | undefined;
  /** The job table's driver (one Postgres's or Citus's): the claim, the heartbeat, the completion and the health monitor's expiry reports go through it. */
  jobTable: JobTableDriver;
  /** A client span per attempt (per webhook request) when on; off (the default), requests carry the stored trace context. */
  tracing?: Tracing | undefined;
}

/** Everything the delivery loop works with, built once. */
export interface DeliveryRuntime {
  events: DeliveryEventEmitter;
  health: HealthMonitor;
  wakeup: Wakeup;
  leases: LeaseKeeper;
  writer: CompletionWriter;
  metrics: DeliveryMetrics;
  settings: DestinationSettings;
  /** Delivers a due delivery of an enabled destination through its kind; its attempts once known. */
  deliver(job: ClaimedDelivery, destination: AnyDestination, body: string): Promise<AttemptResult[]>;
  /** Where attempts of the destination go, as its kind names it. */
  labelOf(destination: AnyDestination): string;
  /** Deliveries of the destination its kind takes at once; undefined: the configured per-destination concurrency. */
  inFlightLimit(destinationId: string): number | undefined;
  /** How the destination's kind fills a batch (kinds/kind.ts batchWindow); undefined: it sends what it is given. */
  batchWindow(destination: AnyDestination): { calls: number; waitMs: number } | undefined;
  /** Each turn of the loop: time-based work of the kinds (batches due by the flush interval, idle pools). */
  tick(): void;
  /** Delivers what the kinds hold now (batches not yet due), without waiting for their time. */
  flush(): void;
  /**
   * Endpoint health of results recorded outside the completion writer (a
   * call log page), in the transaction that records them; returns what
   * announces the circuit changes, to call once it commits.
   */
  recordHealth(tx: Queryable, completions: readonly DeliveryCompletion[]): Promise<() => void>;
  /** Starts what runs beside the loop: the wake-up's subscription, lease heartbeats, the health monitor. */
  start(): Promise<void>;
  /** Resolves once results given to the writer are written and the events they caused are sent. */
  settle(): Promise<void>;
  /** Closes everything, giving up what is not done within `left()` ms (the shutdown deadline). */
  close(left: () => number): Promise<void>;
}

/**
 * The delivery wing's composition root: builds the collaborators of the
 * loop once (the address guard, the HTTP clients, the wake-up, the lease
 * keeper, the completion writer, endpoint health and operator events, the
 * delivery half of every registered kind) and
 * wires what each result causes: leases released, metrics, circuit changes
 * announced, a wake-up when a claim may find more. The loop itself only
 * claims, delivers and stops.
 */
export function createDeliveryRuntime(options: DeliveryRuntimeOptions): DeliveryRuntime {
  const { pool, config, clock, logger } = options;
  const metrics = createDeliveryMetrics(options.metrics);
  const events = createDeliveryEvents(logger);
  const settings = createDestinationSettings({ pool });
  // One guard: the default clients check resolved addresses with it, and
  // sendAll checks literal addresses before any request (custom dispatchers too).
  const guard = options.guard ?? createAddressGuard({ allowPrivate: config.allowPrivateDestinations, allowedCidrs: config.allowedCidrs });
  // Webhooks go through a client per destination, so an endpoint that hangs
  // (or, with pipelining on, stalls its body) holds only its own
  // destination's requests; operator events through one shared client.
  const dispatcher =
    options.dispatcher ??
    createHttpClient({
      guard,
      timeoutMs: config.timeoutMs,
      ca: options.ca,
      outbound: options.outbound,
    });
  const dispatchers = options.dispatcher
    ? undefined
    : createDestinationDispatchers({
        guard,
        timeoutMs: config.timeoutMs,
        ca: options.ca,
        outbound: options.outbound,
        pipelining: config.pipelining,
        // A destination never has more than its cap in flight (a delivery's
        // URLs aside), so more connections than that would sit idle.
        connectionsPerOrigin: Math.min(config.perDestinationConcurrency, 128),
        now: () => clock.now().getTime(),
      });
  const wakeup = createWakeup(options.notifier);
  const operatorEvents = createOperatorEvents({
    webhook: options.operatorWebhook,
    dispatcher,
    guard,
    timeoutMs: config.timeoutMs,
    clock,
    logger,
  });
  const health = createHealthMonitor({ pool, clock, logger, metrics: options.metrics, events: operatorEvents, jobTable: options.jobTable });
  let announcing: Promise<void> = Promise.resolve();
  const announce = (transitions: Transition[]) => {
    // The gauge now, before the deliveries' completion is told: a reader of both never sees it behind.
    health.markTransitions(transitions);
    // A closed circuit's backlog is due now: claim it without waiting for the poll.
    if (transitions.some((t) => t.kind === "closed")) wakeup.wake();
    announcing = announcing
      .then(() => health.transitions(transitions))
      .catch((error) => logger.error({ err: error }, "announcing circuit changes failed"));
  };
  // Lease extensions and completion writes take turns (lease-write-lane.ts).
  const lane = createLeaseWriteLane();
  const leases = createLeaseKeeper({
    lane,
    jobTable: options.jobTable,
    pool,
    clock,
    leaseMs: config.leaseMs,
    logger,
    onLost: (ids) => {
      logger.warn(
        { count: ids.length },
        "delivery leases lost while held here (taken over, cancelled or replayed); those not yet sent are dropped",
      );
      events.emit("lost", ids);
    },
  });
  const onWritten = (written: DeliveryCompletion[], stale: DeliveryCompletion[], transitions: Transition[]) => {
    // Written or not, these leases are over: no more heartbeats for them.
    for (const c of written) leases.release(c.id);
    for (const c of stale) leases.release(c.id);
    for (const c of written) if (c.attempted) metrics.finished(c.destinationId, c.status);
    if (transitions.length > 0) announce(transitions);
    if (written.length > 0) events.emit("completed", written);
    // A finished delivery of a per-user ordered destination may release
    // that user's next one: claim now rather than at the next poll.
    if (written.some((c) => c.status !== "pending" && c.status !== "retrying" && settings.isOrdered(c.destinationId))) wakeup.wake();
    if (stale.length > 0) {
      logger.info({ count: stale.length }, "delivery results dropped: their deliveries changed hands or state meanwhile");
      events.emit("stale", stale);
    }
  };
  const writer = createCompletionWriter({
    lane,
    jobTable: options.jobTable,
    pool,
    logger,
    health: { policy: { circuit: config.circuit, retry: config.retry }, clock },
    refusals: { retryDelayMs: config.retry.initialDelayMs },
    onDropped: (dropped) => {
      for (const c of dropped) leases.release(c.id);
    },
    onWritten,
  });

  // Each registered kind's delivery half, built once; a destination goes to its kind's.
  const tracing = options.tracing ?? tracingOff;
  const context = {
    pool,
    config,
    clock,
    logger,
    metrics: options.metrics,
    guard,
    tracing,
    http: <T>(destinationId: string, send: (d: Dispatcher) => Promise<T>) =>
      dispatchers ? dispatchers.use(destinationId, send) : send(dispatcher),
  };
  const deliveries = new Map<string, KindDelivery<AnyDestination>>(
    registeredKinds.map((kind) => [kind.name, kind.createDelivery(context)]),
  );
  const deliveryOf = (destination: AnyDestination) => deliveries.get(kindOf(destination).name)!;
  let lastReconcile = clock.now().getTime();
  let reconciling = false;
  const reconcile = () => {
    // Deleted or changed destinations lose what their kind holds open (pools, connections) even when no delivery of theirs comes by.
    const open = [...deliveries.values()].flatMap((d) => d.openDestinations?.() ?? []);
    const now = clock.now().getTime();
    if (open.length === 0 || reconciling || now - lastReconcile < reconcileEveryMs) return;
    lastReconcile = now;
    reconciling = true;
    loadDestinations(pool, open)
      .then((current) => {
        for (const [name, delivery] of deliveries) {
          const own = new Map([...current].filter(([, destination]) => destination.kind === name));
          delivery.reconcile?.(own);
        }
      })
      .catch((error) => logger.warn({ err: error }, "checking destinations with open connections failed"))
      .finally(() => (reconciling = false));
  };

  return {
    events,
    health,
    wakeup,
    leases,
    writer,
    metrics,
    settings,
    deliver(job, destination, body) {
      const delivery = deliveryOf(destination);
      const send = (earlier?: EarlierAttempts) => {
        // Kinds that send requests start a span per request themselves; every other attempt gets one here.
        const span = delivery.span?.(destination);
        if (!span) return delivery.deliver(job, destination, body, earlier);
        return traceDelivery(tracing, job, destination, span, (traced) => delivery.deliver(traced, destination, body, earlier));
      };
      // A retry of a kind sent in parts runs only the parts not yet done (kinds/kind.ts, CompletionRule).
      if (job.attemptCount === 0 || completionOf(destination) !== "every-part") return send();
      return succeededParts(pool, job.destinationId, job.id).then((parts) => send({ succeededParts: parts }));
    },
    labelOf: (destination) => deliveryOf(destination).label(destination),
    batchWindow: (destination) => deliveryOf(destination).batchWindow?.(destination),
    async recordHealth(tx, completions) {
      const policy = { circuit: config.circuit, retry: config.retry };
      const transitions = await recordHealth(tx, completions, policy, clock.now(), options.jobTable.lockHealthRows);
      return () => {
        if (transitions.length > 0) announce(transitions);
      };
    },
    inFlightLimit(destinationId) {
      const destination = settings.get(destinationId);
      return destination ? deliveryOf(destination).inFlightLimit?.(destination) : undefined;
    },
    flush() {
      for (const delivery of deliveries.values()) delivery.flush?.();
    },
    tick() {
      for (const delivery of deliveries.values()) delivery.tick?.();
      reconcile();
    },
    async start() {
      await wakeup.listen();
      leases.start();
      health.start();
    },
    async settle() {
      await writer.flush();
      await announcing;
      await operatorEvents.flush();
    },
    async close(left) {
      // What the kinds hold (batches) is delivered first, so their results can still be written.
      await within(Promise.allSettled([...deliveries.values()].map((d) => d.close())), left());
      await writer.close(left());
      leases.stop();
      await health.stop();
      await within(announcing, left());
      await within(operatorEvents.stop(), left());
      wakeup.close();
      if (!options.dispatcher) {
        await dispatchers?.close(left());
        await (dispatcher as { close(): Promise<void> }).close();
      }
    },
  };
}

/** How often what kinds hold open (warehouse pools) is checked against their destinations' settings. */
const reconcileEveryMs = 30_000;

/** Waits for a promise, but no longer than ms. */
export async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
