import type pg from "pg";
import type { Dispatcher } from "undici";
import { createBacklogReader } from "./backlog-reader.js";
import { openAccessWing } from "./access-wing.js";
import { createAuthenticator } from "./api/auth.js";
import { createSignInRoutes } from "./sign-in/sign-in-routes.js";
import { createRpcHandlers } from "./api/routes.js";
import { createAnalyticsJsRoute } from "./compat/analytics-js-bundle.js";
import { createAnalyticsSettingsRoute } from "./compat/analytics-settings.js";
import { createAnonymousIdCookieRoute } from "./compat/anonymous-id-cookie.js";
import { createCompatHttpApi } from "./compat/http-api.js";
import { createConsoleRoutes } from "./console/serve.js";
import { systemClock, type Clock } from "./clock.js";
import type { Config } from "./config.js";
import { deliveriesChannel, type JobTableDriver } from "./db/job-table/index.js";
import { hooksChannel } from "./db/queries/hook-notify.js";
import { ping } from "./db/pool.js";
import { createAddressGuard } from "./outbound/address-guard.js";
import { createBackfillJob } from "./delivery/backfill-job.js";
import { createJobRunner, type JobRunner } from "./background/job-runner.js";
import { createRetryJob } from "./delivery/retry-job.js";
import { createLakeDeletionJob } from "./deletion/lake-deletion-job.js";
import { createTransformSandboxes, destinationOf } from "./sandbox/transform-sandbox.js";
import { createDeliveryLoop, type DeliveryLoop } from "./delivery/loop.js";
import { createMaintenance, type Maintenance } from "./background/maintenance.js";
import { createNotifier } from "./background/notifier.js";
import { createThrottledNotify } from "./background/throttled-notify.js";
import { matcherOfRow } from "./delivery/kinds/registry.js";
import { createCors } from "./http/cors.js";
import { checkListenAddress } from "./http/port-check.js";
import { createOperationalRoutes } from "./http/operational-routes.js";
import { createRouteTable, prefixRoute } from "./http/route-table.js";
import type { RouteHandler } from "./http/types.js";
import { createIngestor, type Ingestor } from "./ingest/ingestor.js";
import { createHookProcessor, type HookProcessor } from "./ingest/hooks/hook-processor.js";
import { createIngestAdmission } from "./http/ingest-admission.js";
import { createHookRoute } from "./ingest/hooks/hook-route.js";
import type { Logger } from "./logger.js";
import { createMetrics, type Metrics } from "./metrics.js";
import { createPlanCache } from "./plans/plan-cache.js";
import { createTrackingPlans } from "./plans/tracking-plans.js";
import { createViolationRecorder } from "./plans/violation-recorder.js";
import { startTracing } from "./tracing/start-tracing.js";
import type { Tracing } from "./tracing/tracing.js";
import { closeAll, type Closer } from "./closers.js";
import { openDatabase, type DatabaseWing } from "./database-wing.js";
import { openListener } from "./listener-wing.js";
import { openIdentityResolver } from "./identity-wing.js";
import type { IdentityResolver } from "./identity/identity-resolver.js";

export interface WaypostOptions {
  config: Config;
  logger: Logger;
  clock?: Clock;
  /** Outbound HTTP for deliveries; defaults to the guarded undici client. */
  dispatcher?: Dispatcher;
  /** Extra CA certificates outbound requests trust, beside the system roots and NODE_EXTRA_CA_CERTS. */
  ca?: string | string[];
  /**
   * The HTTP routes, given the default ones in order (operational, /v1, /hooks,
   * analytics.js, /auth, console, RPCs): tests put a spy in front of one, or wrap it.
   */
  routes?: (defaults: readonly RouteHandler[]) => RouteHandler[];
}

export interface Waypost {
  /** http://host:port of the API. */
  url: string;
  port: number;
  pool: pg.Pool;
  /** DeliveryService's reads: a pool of their own (WAYPOST_ADMIN_READ_CONNECTIONS). */
  adminReadPool: pg.Pool;
  connectionString: string;
  adminToken: string;
  /** The job table's driver this process chose at start: one Postgres's, or Citus's. */
  jobTable: JobTableDriver;
  ingestor: Ingestor;
  metrics: Metrics;
  /** Spans of tracking requests and webhook attempts (off unless an OTLP endpoint is set). */
  tracing: Tracing;
  /** Present when this process delivers (role worker or all). */
  delivery: DeliveryLoop | undefined;
  maintenance: Maintenance | undefined;
  /** Present when this process works background jobs, backfills and bulk retries (role worker or all; tests wait with idle()). */
  jobs: JobRunner | undefined;
  /** Present when this process turns webhook sources' requests into calls (role worker or all; wake(sourceId) after storing one). */
  hooks: HookProcessor | undefined;
  /** Present when this process resolves calls into profiles (role worker or all; tests wait with caughtUp()). */
  identity: IdentityResolver | undefined;
  stop(): Promise<void>;
}

/**
 * The composition root, wing by wing: the database, what the wings share,
 * ingest, delivery, the API, then the listener. Everything is created here
 * from the config and passed down; nothing happens at import. Each wing
 * pushes its closers as it opens; stop() and a failing start both unwind the
 * one list (newest first), so nothing opened is left behind.
 */
export async function startWaypost(options: WaypostOptions): Promise<Waypost> {
  const closers: Closer[] = [];
  try {
    return await open(options, closers);
  } catch (error) {
    await closeAll(closers).catch((closeError: unknown) => {
      options.logger.warn({ err: closeError }, "closing after a failed start failed");
    });
    throw error;
  }
}

/** What every wing is given: the options, the clock, and where to push what it opens. */
interface Wiring {
  options: WaypostOptions;
  config: Config;
  logger: Logger;
  clock: Clock;
  closers: Closer[];
}

async function open(options: WaypostOptions, closers: Closer[]): Promise<Waypost> {
  const { config, logger } = options;
  const wiring: Wiring = { options, config, logger, clock: options.clock ?? systemClock, closers };
  // Before the database set-up, which may take seconds: a port in use is named at once.
  await checkListenAddress(config.port, config.host);
  const database = await openDatabase(wiring);
  const shared = await openShared(wiring, database);
  const ingest = openIngest(wiring, database, shared);
  const delivery = await openDelivery(wiring, database, shared, ingest);
  let stopping = false;
  const handler = openApi(wiring, database, shared, ingest, delivery, () => stopping);
  const { url, port } = await openListener({ ...wiring, handler, pool: database.pool, metrics: shared.metrics, delivery: delivery.loop });
  return {
    url,
    port,
    pool: database.pool,
    adminReadPool: database.adminReadPool,
    connectionString: database.connectionString,
    adminToken: database.adminToken,
    jobTable: database.jobTable,
    ingestor: ingest.ingestor,
    metrics: shared.metrics,
    tracing: shared.tracing,
    delivery: delivery.loop,
    maintenance: delivery.maintenance,
    jobs: delivery.jobs,
    hooks: delivery.hooks,
    identity: delivery.identity,
    async stop() {
      stopping = true;
      await closeAll(closers);
      logger.info("Waypost stopped");
    },
  };
}

type SharedWing = Awaited<ReturnType<typeof openShared>>;
type IngestWing = ReturnType<typeof openIngest>;
type DeliveryWing = Awaited<ReturnType<typeof openDelivery>>;

/** What the wings share: metrics, tracing, the address guard, the transform sandboxes, the notifier. */
async function openShared({ config, logger, clock, closers }: Wiring, { pool, jobTable, connectionString }: DatabaseWing) {
  const metrics = createMetrics({ backlog: createBacklogReader({ pool, clock, logger, jobTable }).read });
  const tracing = await startTracing({
    config: config.tracing,
    onDropped: (count, reason) => metrics.traceSpansDropped.inc({ reason }, count),
  });
  // Pushed before the delivery loop's closer, so it runs after it: the
  // spans of the last attempts are exported too (within the shutdown timeout).
  closers.push(() => tracing.shutdown(config.delivery.shutdownTimeoutMs));
  // One address guard for the process: destination validation at the API
  // and every outbound request check against the same rules.
  const addressGuard = createAddressGuard({
    allowPrivate: config.delivery.allowPrivateDestinations,
    allowedCidrs: config.delivery.allowedCidrs,
  });
  // One set of transform sandboxes per process: the delivery loop runs
  // destinations' transforms in it, the API checks and tests drafts.
  const sandboxes = createTransformSandboxes({
    ...config.transform,
    onFailure: (key, reason) => {
      // A test run's sandbox (TestDestination) is no destination's: its failures are in its answer.
      const destinationId = destinationOf(key);
      if (destinationId) metrics.transformSandboxFailures.inc({ destination_id: destinationId, reason });
    },
  });
  closers.push(async () => sandboxes.close());
  // One LISTEN connection for the process, made at the first subscription
  // (the delivery loop's, the hook processor's): an api process opens none.
  // Pushed before their closers, so it closes after they have unsubscribed.
  const notifier = createNotifier({ connectionString, logger });
  closers.push(() => notifier.close());
  return { metrics, tracing, addressGuard, sandboxes, notifier };
}

/** Ingest: tracking plans, the ingestor, and the wake-up of every process's delivery loop after a commit (docs/design.md). */
function openIngest({ logger, clock, closers }: Wiring, { pool, adminReadPool, jobTable }: DatabaseWing, { metrics }: SharedWing) {
  // Tracking plans: compiled per source and revision; violations counted in memory and written every second.
  const planCache = createPlanCache({ pool, logger, clock });
  const violationRecorder = createViolationRecorder({ pool, logger, metrics });
  violationRecorder.start();
  closers.push(() => violationRecorder.stop());
  const trackingPlans = createTrackingPlans({ pool, readPool: adminReadPool, clock, cache: planCache, recorder: violationRecorder });
  const loopWaker = createThrottledNotify({ pool, channel: deliveriesChannel, logger });
  closers.push(() => loopWaker.close());
  const ingestor = createIngestor({
    pool,
    clock,
    metrics,
    plans: { cache: planCache, recorder: violationRecorder },
    onQueued: () => loopWaker.add(),
    jobTable,
    kindMatcher: matcherOfRow,
  });
  return { ingestor, trackingPlans, loopWaker };
}

/** Delivery (role worker or all): the loop, maintenance, and background jobs (backfills, bulk retries). */
async function openDelivery(
  { options, config, logger, clock, closers }: Wiring,
  database: DatabaseWing,
  shared: SharedWing,
  ingest: IngestWing,
) {
  const { pool, jobTable } = database;
  if (config.role === "api") return { loop: undefined, maintenance: undefined, jobs: undefined, hooks: undefined, identity: undefined };
  const loop: DeliveryLoop = createDeliveryLoop({
    pool,
    notifier: shared.notifier,
    config: config.delivery,
    clock,
    logger,
    metrics: shared.metrics,
    dispatcher: options.dispatcher,
    ca: options.ca,
    outbound: config.outbound,
    operatorWebhook: config.operatorWebhook,
    guard: shared.addressGuard,
    sandboxes: shared.sandboxes,
    tracing: shared.tracing,
    jobTable,
  });
  await loop.start();
  closers.push(() => loop.stop());
  const maintenance: Maintenance = createMaintenance({
    pool,
    clock,
    logger,
    retentionMs: config.retentionMs,
    deadlineMs: config.delivery.retry.deadlineMs,
    jobTable,
  });
  maintenance.start();
  closers.push(() => maintenance.stop());
  // Backfills, bulk retries and lake deletions are jobs in Postgres: any worker process
  // takes them (an api process only stores them).
  const jobs: JobRunner = createJobRunner({
    pool,
    clock,
    logger,
    leaseMs: config.delivery.leaseMs,
    handlers: {
      backfill: createBackfillJob({ jobTable, guard: shared.addressGuard }),
      retry: createRetryJob({ jobTable }),
      lake_deletion: createLakeDeletionJob({ pool, guard: shared.addressGuard }),
    },
  });
  await jobs.start();
  closers.push(() => jobs.stop());
  // Webhook sources' stored requests become calls wherever calls are delivered.
  const hooks: HookProcessor = createHookProcessor({
    pool,
    notifier: shared.notifier,
    clock,
    logger,
    ingestor: ingest.ingestor,
    sandboxes: shared.sandboxes,
    leaseMs: config.delivery.leaseMs,
    metrics: shared.metrics,
    onQueued: () => ingest.loopWaker.add(),
  });
  await hooks.start();
  closers.push(() => hooks.stop());
  const identity = openIdentityResolver({ pool, clock, logger, config: config.identity, callLog: jobTable.callLog, closers });
  return { loop, maintenance, jobs, hooks, identity };
}

/** The API (role api or all): the RPCs, the compatible /v1 API and the console, beside the operational routes every role serves. */
function openApi(
  { options, config, logger, clock, closers }: Wiring,
  database: DatabaseWing,
  shared: SharedWing,
  ingest: IngestWing,
  delivery: DeliveryWing,
  stopping: () => boolean,
) {
  const { pool } = database;
  const access = openAccessWing({ pool, clock, logger, config: config.access, adminToken: database.adminToken, ingestor: ingest.ingestor });
  closers.push(async () => access.close());
  const auth = createAuthenticator({ pool, credentials: access.credentials });
  // After the inbound URL commits a request (or requests are set to run again), every process's hook processor is woken (a NOTIFY after the commit).
  const hookWaker = createThrottledNotify({ pool, channel: hooksChannel, logger });
  closers.push(() => hookWaker.close());
  // One set of turns for the process's ingest, RPC and /v1 alike.
  const ingestAdmission = config.ingestConcurrency > 0 ? createIngestAdmission({ slots: config.ingestConcurrency }) : undefined;
  const rpc = createRpcHandlers({
    ingestAdmission,
    adminReads: { pool: database.adminReadPool, ...config.adminReads },
    pool,
    clock,
    ingestor: ingest.ingestor,
    auth,
    logger,
    bodies: config.bodies,
    addressGuard: shared.addressGuard,
    signingSecretOverlapMs: config.signingSecretOverlapMs,
    callLog: config.delivery.callLog,
    onJobCreated: () => delivery.jobs?.wake(),
    sandboxes: shared.sandboxes,
    retentionMs: config.retentionMs,
    trackingPlans: ingest.trackingPlans,
    tracing: shared.tracing,
    // Requests set to run again wake every process's processor, as stored ones do.
    onHookRequestsQueued: (sourceId) => hookWaker.add(sourceId),
    jobTable: database.jobTable,
    audit: access.audit,
    // Identity resolution reads calls as the call log does: one Postgres only.
    identity: config.identity.enabled && database.jobTable.callLog ? { types: config.identity.rules.map((rule) => rule.type) } : undefined,
  });
  const operational = createOperationalRoutes({
    registry: shared.metrics.registry,
    isReady: async () => !stopping() && (await ping(pool)),
  });
  const serveRpc = config.role !== "worker";
  // The compatible /v1 API and the console come before the RPCs; the
  // operator console is served wherever the API is (same origin, same port).
  const defaultRoutes: RouteHandler[] = [
    operational,
    ...(serveRpc
      ? [
          createCompatHttpApi({
            ingestor: ingest.ingestor,
            auth,
            logger,
            bodies: config.bodies,
            admission: ingestAdmission,
            tracing: shared.tracing,
            // First-party collection's paths under /v1.
            before: [
              createAnalyticsSettingsRoute({ sourceForWriteKey: (key) => auth.sourceForWriteKey(key) }),
              createAnonymousIdCookieRoute({ bodies: config.bodies }),
            ],
          }),
          createHookRoute({
            pool,
            clock,
            logger,
            metrics: shared.metrics,
            bodies: config.bodies,
            onHookRequestStored: (sourceId) => hookWaker.add(sourceId),
          }),
          createAnalyticsJsRoute(),
          // Sign-in through the identity provider: /auth/* only.
          createSignInRoutes({ pool, clock, logger, config: config.access }),
          createConsoleRoutes(),
          prefixRoute(rpc.trackingPrefix, rpc.tracking),
          prefixRoute("/waypost.v1.", rpc.admin),
        ]
      : []),
  ];
  const cors = serveRpc ? createCors({ origins: config.corsOrigins }) : undefined;
  return createRouteTable({
    cors: cors ? (req, res, path) => cors.handle(req, res, path) : undefined,
    routes: options.routes ? options.routes(defaultRoutes) : defaultRoutes,
    logger,
  });
}
