import type http from "node:http";
import type http2 from "node:http2";
import type pg from "pg";
import type { Dispatcher } from "undici";
import { resolveAdminToken } from "./admin-token.js";
import { createAuthenticator } from "./api/auth.js";
import { createRpcHandlers } from "./api/routes.js";
import { createCompatHttpApi } from "./compat/http-api.js";
import { createConsoleRoutes } from "./console/serve.js";
import { systemClock, type Clock } from "./clock.js";
import type { Config } from "./config.js";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "./db/embedded.js";
import { runMigrations } from "./db/migrate.js";
import { createPool } from "./db/pool.js";
import { createBulkReplayer } from "./delivery/bulk-replayer.js";
import { createDeliveryLoop, type DeliveryLoop } from "./delivery/loop.js";
import { createMaintenance, type Maintenance } from "./delivery/maintenance.js";
import { listen, type Listener } from "./http/listener.js";
import { createOperationalRoutes, sendJson } from "./http/operational-routes.js";
import { createIngestor, type Ingestor } from "./ingest/ingestor.js";
import type { Logger } from "./logger.js";
import { createMetrics, type Metrics } from "./metrics.js";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

/** Extra HTTP routes mounted beside the RPCs (the compatible /v1 API). */
export type RouteHandler = (req: Req, res: Res, path: string) => Promise<boolean>;

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

/**
 * The composition root: database, migrations, API, delivery loop. Everything
 * is created here from the config and passed down; nothing happens at import.
 */
export async function startWaypost(options: WaypostOptions): Promise<Waypost> {
  const { config, logger } = options;
  const clock = options.clock ?? systemClock;
  let embedded: EmbeddedPostgres | undefined;
  if (!config.databaseUrl) {
    embedded = await startEmbeddedPostgres({ dataDir: config.dataDir, logger });
    logger.info({ dataDir: config.dataDir }, "started embedded Postgres (set DATABASE_URL to use your own)");
  }
  const connectionString = config.databaseUrl ?? embedded!.url;
  const pool = createPool({ connectionString, max: 20 });
  let stopping = false;
  try {
    await runMigrations(pool);
  } catch (error) {
    await pool.end();
    await embedded?.stop();
    throw error;
  }
  const admin = await resolveAdminToken(config.adminToken, config.dataDir);
  if (admin.file) {
    logger.info({ file: admin.file }, admin.created ? "created an admin token; read it from this file" : "admin token is in this file");
  }
  const metrics = createMetrics();
  const ingestor = createIngestor({ pool, clock, metrics });
  const auth = createAuthenticator({ pool, adminToken: admin.token });
  const replayer = createBulkReplayer({ pool, clock, logger });
  const rpc = createRpcHandlers({ pool, clock, ingestor, auth, replayer, retentionMs: config.retentionMs });
  const operational = createOperationalRoutes({
    registry: metrics.registry,
    isReady: async () => !stopping && (await pool.query("SELECT 1")).rowCount === 1,
  });
  // The operator console is served wherever the API is (same origin, same port).
  const extraRoutes: RouteHandler[] = [createCompatHttpApi({ ingestor, auth, logger }), createConsoleRoutes()];
  const serveRpc = config.role !== "worker";

  const handler = (req: Req, res: Res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    void (async () => {
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
    });
    await delivery.start();
    maintenance = createMaintenance({
      pool,
      clock,
      logger,
      retentionMs: config.retentionMs,
      deadlineMs: config.delivery.retry.deadlineMs,
    });
    maintenance.start();
  }

  let listener: Listener;
  try {
    listener = await listen(handler, config.port, config.host);
  } catch (error) {
    await delivery?.stop();
    await maintenance?.stop();
    await pool.end();
    await embedded?.stop();
    throw error;
  }
  const host = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${listener.port}`;
  logger.info({ url, role: config.role }, "Waypost is listening");

  return {
    url,
    port: listener.port,
    pool,
    connectionString,
    adminToken: admin.token,
    ingestor,
    metrics,
    delivery,
    maintenance,
    extraRoutes,
    async stop() {
      stopping = true;
      await listener.close();
      await replayer.stop();
      await maintenance?.stop();
      await delivery?.stop();
      await pool.end();
      await embedded?.stop();
      logger.info("Waypost stopped");
    },
  };
}
