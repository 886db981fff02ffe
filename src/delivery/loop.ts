import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import { hostname } from "node:os";
import type pg from "pg";
import type { Dispatcher } from "undici";
import type { Clock } from "../clock.js";
import type { DeliveryConfig, OperatorWebhookConfig } from "../config.js";
import { claimDeliveries, type ClaimedDelivery, type DeliveryCompletion } from "../db/job-table/index.js";
import { loadDestinationConfigs, type DestinationConfigRow } from "../db/queries/destinations.js";
import type { Transition } from "../health/circuit.js";
import { createHealthMonitor, type HealthMonitor } from "../health/health-monitor.js";
import { createOperatorEvents } from "../health/operator-events.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics.js";
import { createAddressGuard } from "../outbound/address-guard.js";
import { createCompletionWriter } from "./completion-writer.js";
import { createDeliveryMetrics } from "./delivery-metrics.js";
import { createDestinationDispatchers } from "./destination-dispatchers.js";
import { createHttpClient } from "../outbound/http-client.js";
import { heldPerDestination } from "./held-rounds.js";
import { createLeaseKeeper } from "./lease-keeper.js";
import { createWakeup } from "./wakeup.js";
import { decideCompletion, prepareDelivery, releaseCompletion, sendAll } from "./stages.js";

export interface DeliveryLoopOptions {
  pool: pg.Pool;
  /** For the LISTEN connection, which must not come from the pool. */
  connectionString: string;
  config: DeliveryConfig;
  clock: Clock;
  logger: Logger;
  metrics?: Metrics | undefined;
  /** Outbound HTTP for every destination; by default each destination gets a guarded undici client of its own. */
  dispatcher?: Dispatcher | undefined;
  /** Extra trusted CAs for the default client. */
  ca?: string | string[] | undefined;
  /** Jitter source, for tests. */
  random?: () => number;
  /** Most deliveries one claim takes. */
  maxClaim?: number;
  /** Where operator events (circuit opened/closed, deliveries expired) are POSTed; unset: only logged. */
  operatorWebhook?: OperatorWebhookConfig | undefined;
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
   * "completed": DeliveryCompletion[] after each batch is written; "stale":
   * results not written because the delivery's lease had moved on;
   * "lost": delivery ids dropped unsent, or found in flight, after their
   * lease moved on;
   * "claimed": { count, startedAt } after each claim (startedAt:
   * performance.now() when it began).
   */
  readonly events: EventEmitter;
  /** Endpoint health: the circuit gauge and operator events of this process. */
  readonly health: HealthMonitor;
}

interface DestinationSlots {
  inFlight: number;
  waiting: Array<{ job: ClaimedDelivery; destination: DestinationConfigRow | undefined }>;
}

/**
 * The producer: claims due deliveries, never more than it has free slots,
 * and runs each through prepare → send → record. Per-destination caps keep
 * a slow endpoint from taking every slot: a destination at its cap is left
 * out of the next claims.
 */
export function createDeliveryLoop(options: DeliveryLoopOptions): DeliveryLoop {
  const { pool, config, clock, logger } = options;
  const metrics = createDeliveryMetrics(options.metrics);
  const owner = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  const maxClaim = options.maxClaim ?? 500;
  // One guard: the default clients check resolved addresses with it, and
  // sendAll checks literal addresses before any request (custom dispatchers too).
  const guard = createAddressGuard({ allowPrivate: config.allowPrivateDestinations, allowedCidrs: config.allowedCidrs });
  // Webhooks go through a client per destination, so an endpoint that hangs
  // (or, with pipelining on, stalls its body) holds only its own
  // destination's requests; operator events through one shared client.
  const dispatcher = options.dispatcher ?? createHttpClient({ guard, timeoutMs: config.timeoutMs, ca: options.ca });
  const dispatchers = options.dispatcher
    ? undefined
    : createDestinationDispatchers({
        guard,
        timeoutMs: config.timeoutMs,
        ca: options.ca,
        pipelining: config.pipelining,
        // A destination never has more than its cap in flight (a delivery's
        // URLs aside), so more connections than that would sit idle.
        connectionsPerOrigin: Math.min(config.perDestinationConcurrency, 128),
        now: () => clock.now().getTime(),
      });
  const events = new EventEmitter();
  const slots = new Map<string, DestinationSlots>();
  // Destinations with per-user ordering, as of their last claim here.
  const ordered = new Set<string>();
  // Destination settings by id, with the revision they were read at.
  const configs = new Map<string, DestinationConfigRow>();
  const active = new Set<Promise<void>>();
  let queued = 0;
  let running = false;
  let capacityBound = false;
  // When a rate-limited destination will have tokens again (ms, from the last claim).
  let refillWaitMs: number | undefined;
  let loopDone: Promise<void> = Promise.resolve();
  const wakeup = createWakeup({ connectionString: options.connectionString, logger });
  const operatorEvents = createOperatorEvents({
    webhook: options.operatorWebhook,
    dispatcher,
    guard,
    timeoutMs: config.timeoutMs,
    clock,
    logger,
  });
  const health = createHealthMonitor({ pool, clock, logger, metrics: options.metrics, events: operatorEvents });
  let announcing: Promise<void> = Promise.resolve();
  const announce = (transitions: Transition[]) => {
    // A closed circuit's backlog is due now: claim it without waiting for the poll.
    if (transitions.some((t) => t.kind === "closed")) wakeup.wake();
    announcing = announcing
      .then(() => health.transitions(transitions))
      .catch((error) => logger.error({ err: error }, "announcing circuit changes failed"));
  };
  const leases = createLeaseKeeper({
    pool,
    clock,
    leaseMs: config.leaseMs,
    logger,
    onLost: (ids) => {
      logger.warn({ count: ids.length }, "delivery leases lost while held here (taken over, cancelled or replayed); those not yet sent are dropped");
      events.emit("lost", ids);
    },
  });
  const writer = createCompletionWriter({
    pool,
    logger,
    health: { policy: { circuit: config.circuit, retry: config.retry }, clock },
    refusals: { retryDelayMs: config.retry.initialDelayMs },
    onDropped: (dropped) => {
      for (const c of dropped) leases.release(c.id);
    },
    onWritten: (written, stale, transitions) => {
      // Written or not, these leases are over: no more heartbeats for them.
      for (const c of written) leases.release(c.id);
      for (const c of stale) leases.release(c.id);
      for (const c of written) if (c.attempted) metrics.finished(c.destinationId, c.status);
      if (transitions.length > 0) announce(transitions);
      if (written.length > 0) events.emit("completed", written);
      // A finished delivery of a per-user ordered destination may release
      // that user's next one: claim now rather than at the next poll.
      if (written.some((c) => c.status !== "pending" && c.status !== "retrying" && ordered.has(c.destinationId))) wakeup.wake();
      if (stale.length > 0) {
        logger.info({ count: stale.length }, "delivery results dropped: their deliveries changed hands or state meanwhile");
        events.emit("stale", stale);
      }
    },
  });

  function slotsOf(destinationId: string): DestinationSlots {
    let entry = slots.get(destinationId);
    if (!entry) slots.set(destinationId, (entry = { inFlight: 0, waiting: [] }));
    return entry;
  }

  // Deliveries one destination may have here, in flight and waiting: see
  // heldPerDestination. Bigger claims cost less per delivery (a claim of 64
  // rows costs Postgres about 40 µs a row, one of 256 about 24).
  const perDestinationHeld = heldPerDestination(config);
  // Claim ahead of the senders: once a quarter of a destination's room (or
  // of the process's slots, when those cut the last claim short) is free,
  // so the next claim's round trip overlaps the sends still queued here.
  const claimAheadRoom = Math.max(1, Math.floor(perDestinationHeld / 4));
  const claimAheadSlots = Math.max(1, Math.floor(config.concurrency / 4));
  // The last claim took all the process's free slots allowed.
  let slotsBound = false;

  async function claimOnce(): Promise<boolean> {
    const free = config.concurrency - queued;
    if (free <= 0) {
      capacityBound = true;
      return false;
    }
    const limit = Math.min(free, maxClaim);
    const startedAt = performance.now();
    const claimedAt = clock.now();
    const room = new Map<string, number>();
    for (const [id, entry] of slots) room.set(id, Math.max(0, perDestinationHeld - entry.inFlight - entry.waiting.length));
    const claim = await claimDeliveries(pool, {
      now: claimedAt,
      limit,
      perDestinationLimit: perDestinationHeld,
      room,
      leaseMs: config.leaseMs,
      owner,
    });
    const jobs = claim.deliveries;
    refillWaitMs = claim.refillWaitMs;
    for (const job of jobs) leases.hold(job, claimedAt);
    if (jobs.length > 0) {
      await refreshConfigs(jobs);
      for (const job of jobs) enqueue(job, configs.get(job.destinationId));
    }
    events.emit("claimed", { count: jobs.length, startedAt });
    // More may be due when the claim was cut short: by this process's free
    // slots, or by the room of a destination (it got all it asked for).
    const claimed = new Map<string, number>();
    for (const job of jobs) claimed.set(job.destinationId, (claimed.get(job.destinationId) ?? 0) + 1);
    slotsBound = jobs.length === limit;
    capacityBound =
      jobs.length === limit ||
      [...room].some(([id, free]) => free === 0 && slots.has(id)) ||
      [...claimed].some(([id, n]) => n >= (room.get(id) ?? perDestinationHeld));
    return jobs.length === limit;
  }

  /**
   * Reads the settings of the claimed deliveries' destinations whose
   * revision moved (or that are new here): once per destination and
   * revision, not once per claim. The claim reads the revision in its own
   * snapshot, so a change applies to every delivery claimed after it commits.
   */
  async function refreshConfigs(jobs: readonly ClaimedDelivery[]) {
    const seen = new Map<string, number | null>();
    for (const job of jobs) seen.set(job.destinationId, job.destinationRevision);
    const stale = [...seen].filter(([id, revision]) => revision === null || configs.get(id)?.revision !== revision).map(([id]) => id);
    if (stale.length > 0) {
      // Bounded: destinations not claimed lately are read again when they are.
      if (configs.size + stale.length > 10_000) configs.clear();
      const loaded = await loadDestinationConfigs(pool, stale);
      for (const id of stale) {
        const row = loaded.get(id);
        if (row) configs.set(id, row);
        else configs.delete(id);
      }
    }
    for (const id of seen.keys()) {
      if (configs.get(id)?.ordering === "per_user") ordered.add(id);
      else ordered.delete(id);
    }
  }

  function enqueue(job: ClaimedDelivery, destination: DestinationConfigRow | undefined) {
    queued++;
    metrics.inFlight(1);
    const entry = slotsOf(job.destinationId);
    if (entry.inFlight < config.perDestinationConcurrency) start(job, destination, entry);
    else entry.waiting.push({ job, destination });
  }

  function start(job: ClaimedDelivery, destination: DestinationConfigRow | undefined, entry: DestinationSlots) {
    entry.inFlight++;
    const work = deliver(job, destination).finally(() => {
      active.delete(work);
      entry.inFlight--;
      queued--;
      metrics.inFlight(-1);
      const next = entry.waiting.shift();
      if (next) start(next.job, next.destination, entry);
      else if (entry.inFlight === 0) slots.delete(job.destinationId);
      // Claim again when the last claim was cut short and a quarter of the
      // room is free again: ahead of the senders, but not a claim per
      // completion (wakes while a claim runs fold into one).
      if (
        capacityBound &&
        (perDestinationHeld - entry.inFlight - entry.waiting.length >= claimAheadRoom ||
          (slotsBound && config.concurrency - queued >= claimAheadSlots))
      ) {
        wakeup.wake();
      }
    });
    active.add(work);
  }

  async function deliver(job: ClaimedDelivery, destination: DestinationConfigRow | undefined): Promise<void> {
    try {
      const preparation = prepareDelivery(job, destination, clock.now());
      if (preparation.kind !== "send") {
        const kind = preparation.kind === "cancel" ? "cancelled" : "release";
        writer.add(releaseCompletion(job, clock.now(), kind));
        return;
      }
      // Claimed ahead, it may have waited rounds here: never send on a lost lease.
      if (!(await leases.ensure(job.id))) {
        logger.info({ deliveryId: job.id }, "delivery dropped unsent: its lease moved on while it waited here");
        events.emit("lost", [job.id]);
        return;
      }
      const send = (d: Dispatcher) => sendAll(preparation.requests, { dispatcher: d, guard, timeoutMs: config.timeoutMs, now: () => clock.now() });
      const results = await (dispatchers ? dispatchers.use(job.destinationId, send) : send(dispatcher));
      metrics.attempted(job.destinationId, results);
      writer.add(decideCompletion(job, results, clock.now(), config.retry, options.random));
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
    }
  }

  return {
    events,
    health,
    async start() {
      running = true;
      await wakeup.listen();
      loopDone = run();
      leases.start();
      health.start();
    },
    poke: () => wakeup.wake(),
    async settle() {
      await Promise.allSettled([...active]);
      await writer.flush();
      await announcing;
      await operatorEvents.flush();
    },
    async stop() {
      // Shutdown must end even while the database is away: whatever is not
      // written by the deadline is dropped, and its leases expire.
      const deadline = Date.now() + config.shutdownTimeoutMs;
      const left = () => Math.max(0, deadline - Date.now());
      running = false;
      wakeup.wake();
      await within(loopDone, left());
      for (const entry of slots.values()) {
        for (const { job } of entry.waiting.splice(0)) {
          queued--;
          metrics.inFlight(-1);
          writer.add(releaseCompletion(job, clock.now(), "release"));
        }
      }
      await within(Promise.allSettled([...active]), left());
      await writer.close(left());
      leases.stop();
      await health.stop();
      await within(announcing, left());
      await within(operatorEvents.stop(), left());
      await wakeup.close();
      if (!options.dispatcher) {
        await dispatchers?.close(left());
        await (dispatcher as { close(): Promise<void> }).close();
      }
    },
  };
}

/** Waits for a promise, but no longer than ms. */
async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

export type { DeliveryCompletion };
