import type pg from "pg";
import type { Dispatcher } from "undici";
import { createActivityLog } from "./activity-log.js";
import { resolveAdminToken } from "./admin-token.js";
import { createAuthenticator } from "./api/auth.js";
import { createRpcHandlers } from "./api/routes.js";
import { createCompatHttpApi } from "./compat/http-api.js";
import { createConsoleRoutes } from "./console/serve.js";
import { systemClock, type Clock } from "./clock.js";
import type { Config } from "./config.js";
import { startEmbeddedPostgres } from "./db/embedded.js";
import { runMigrations } from "./db/migrate.js";
import { createPool, ping } from "./db/pool.js";
import { createAddressGuard } from "./delivery/address-guard.js";
import { createBulkReplayer } from "./delivery/bulk-replayer.js";
import { createDeliveryLoop, type DeliveryLoop } from "./delivery/loop.js";
import { createMaintenance, type Maintenance } from "./delivery/maintenance.js";
import { createCors } from "./http/cors.js";
import { listen } from "./http/listener.js";
import { createOperationalRoutes, sendJson } from "./http/operational-routes.js";
import type { Req, Res, RouteHandler } from "./http/types.js";
import { createIngestor, type Ingestor } from "./ingest/ingestor.js";
import type { Logger } from "./logger.js";
import { createMetrics, type Metrics } from "./metrics.js";
import { StartupError } from "./startup-error.js";

export interface WaypostOptions {
  config: Config;
  logger: Logger;
  clock?: Clock;
  /** Outbound HTTP for deliveries; defaults to the guarded undici client. */
  dispatcher?: Dispatcher;
  /** Extra CA certificates webhooks may be signed with. */
  ca?: string | string[];
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
  ingestor: Ingestor;
  metrics: Metrics;
  /** Present when this process delivers (role worker or all). */
  delivery: DeliveryLoop | undefined;
  maintenance: Maintenance | undefined;
  /** Routes tried before the RPCs; add to it before traffic arrives. */
  extraRoutes: RouteHandler[];
  stop(): Promise<void>;
}

/** Something opened during start-up, closed on stop in reverse order of opening. */
type Closer = () => Promise<void>;

/** Runs the closers newest first; every one runs even if an earlier one fails. */
async function closeAll(closers: Closer[]): Promise<void> {
  let failure: unknown;
  while (closers.length > 0) {
    try {
      await closers.pop()!();
    } catch (error) {
      failure ??= error;
    }
  }
  if (failure !== undefined) throw failure;
}

/**
 * The composition root: database, migrations, API, delivery loop. Everything
 * is created here from the config and passed down; nothing happens at import.
 * Each resource pushes its closer as it opens; stop() and a failing start
 * both unwind the one list, so nothing opened is left behind.
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

async function open(options: WaypostOptions, closers: Closer[]): Promise<Waypost> {
  const { config, logger } = options;
  const clock = options.clock ?? systemClock;
  let connectionString = config.databaseUrl;
  if (!connectionString) {
    const embedded = await startEmbeddedPostgres({ dataDir: config.dataDir, logger });
    closers.push(() => embedded.stop());
    logger.info({ dataDir: config.dataDir }, "started embedded Postgres (set DATABASE_URL to use your own)");
    connectionString = embedded.url;
  }
  const pool = createPool({ connectionString, max: 20, logger });
  closers.push(() => pool.end());
  let stopping = false;
  await runMigrations(pool);
  const admin = await resolveAdminToken(config.adminToken, config.dataDir);
  if (admin.file) {
    logger.info({ file: admin.file }, admin.created ? "created an admin token; read it from this file" : "admin token is in this file");
  }
  const metrics = createMetrics();
  const ingestor = createIngestor({ pool, clock, metrics });
  const auth = createAuthenticator({ pool, adminToken: admin.token });
  const addressGuard = createAddressGuard({
    allowPrivate: config.delivery.allowPrivateDestinations,
    allowedCidrs: config.delivery.allowedCidrs,
  });
  const replayer = createBulkReplayer({ pool, clock, logger });
  closers.push(() => replayer.stop());
  // Admin reads get their own few connections: see RpcHandlersOptions.adminReads.
  const adminReadPool = createPool({
    connectionString,
    max: config.adminReads.connections,
    logger,
    applicationName: "waypost-admin-reads",
    statementTimeoutMs: config.adminReads.statementTimeoutMs,
  });
  closers.push(() => adminReadPool.end());
  const rpc = createRpcHandlers({
    adminReads: { pool: adminReadPool, ...config.adminReads },
    pool,
    clock,
    ingestor,
    auth,
    logger,
    addressGuard,
    signingSecretOverlapMs: config.signingSecretOverlapMs,
    replayer,
    retentionMs: config.retentionMs,
  });
  const operational = createOperationalRoutes({
    registry: metrics.registry,
    isReady: async () => !stopping && (await ping(pool)),
  });
  // The operator console is served wherever the API is (same origin, same port).
  const extraRoutes: RouteHandler[] = [createCompatHttpApi({ ingestor, auth, logger }), createConsoleRoutes()];
  const serveRpc = config.role !== "worker";
  const cors = createCors({ origins: config.corsOrigins });

  const handler = (req: Req, res: Res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    void (async () => {
      // Before any route: preflights are answered or refused here.
      if (serveRpc && cors.handle(req, res, path)) return;
      if (await operational(req, res, path)) return;
      if (serveRpc) {
        for (const route of extraRoutes) if (await route(req, res, path)) return;
        if (path.startsWith(rpc.trackingPrefix)) return rpc.tracking(req as never, res as never);
        if (path.startsWith("/waypost.v1.")) return rpc.admin(req as never, res as never);
      }
      sendJson(res, 404, { error: `no route for ${req.method} ${path}` });
    })().catch((error) => {
      logger.error({ err: error, path }, "request failed");
      if (!res.headersSent) sendJson(res, 500, { error: "internal error" });
      else res.end();
    });
  };

  let delivery: DeliveryLoop | undefined;
  let maintenance: Maintenance | undefined;
  if (config.role !== "api") {
    delivery = createDeliveryLoop({
      pool,
      connectionString,
      config: config.delivery,
      clock,
      logger,
      metrics,
      dispatcher: options.dispatcher,
      ca: options.ca,
      operatorWebhook: config.operatorWebhook,
    });
    const loop = delivery;
    await loop.start();
    closers.push(() => loop.stop());
    maintenance = createMaintenance({
      pool,
      clock,
      logger,
      retentionMs: config.retentionMs,
      deadlineMs: config.delivery.retry.deadlineMs,
    });
    const housekeeping = maintenance;
    housekeeping.start();
    closers.push(() => housekeeping.stop());
  }

  const activity = createActivityLog({ logger, metrics, clock, intervalMs: config.summaryIntervalMs });
  delivery?.events.on("completed", activity.completed);
  closers.push(async () => {
    activity.stop();
    await activity.flush();
  });

  const listener = await listen(handler, config.port, config.host, config.connections).catch((error: unknown) => {
    throw explainListenFailure(error, config.port, config.host);
  });
  closers.push(() => listener.close());
  const host = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${listener.port}`;
  logger.info({ url, role: config.role }, "Waypost is listening");

  return {
    url,
    port: listener.port,
    pool,
    adminReadPool,
    connectionString,
    adminToken: admin.token,
    ingestor,
    metrics,
    delivery,
    maintenance,
    extraRoutes,
    async stop() {
      stopping = true;
      await closeAll(closers);
      logger.info("Waypost stopped");
    },
  };
}

/** A listen error as the operator needs it: which setting to change. */
function explainListenFailure(error: unknown, port: number, host: string): unknown {
  const code = (error as { code?: string } | null)?.code;
  if (code === "EADDRINUSE") {
    return new StartupError(`port ${port} on ${host} is in use (EADDRINUSE; another Waypost?): stop that process or set PORT`, { cause: error });
  }
  if (code === "EACCES") {
    return new StartupError(`port ${port} needs privileges this process lacks (EACCES): set PORT to 1024 or above`, { cause: error });
  }
  if (code === "EADDRNOTAVAIL" || code === "ENOTFOUND") {
    return new StartupError(`HOST ${host} is not an address of this machine (${code}): set HOST (127.0.0.1, or 0.0.0.0 for every interface)`, {
      cause: error,
    });
  }
  return error;
}
