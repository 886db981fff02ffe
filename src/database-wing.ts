import { resolveAdminToken } from "./admin-token.js";
import type { Clock } from "./clock.js";
import type { Closer } from "./closers.js";
import type { Config } from "./config.js";
import { openJobTable } from "./db/citus/open-job-table.js";
import { startEmbeddedPostgres } from "./db/embedded.js";
import { createDayPartitions } from "./db/job-table/index.js";
import { runMigrations } from "./db/migrate.js";
import { closePool, createPool } from "./db/pool.js";
import type { Logger } from "./logger.js";

/** What opening the database needs from the composition root (server.ts's wiring). */
export interface DatabaseWiring {
  config: Config;
  logger: Logger;
  clock: Clock;
  /** Where what it opens is pushed, to be closed newest first. */
  closers: Closer[];
}

export type DatabaseWing = Awaited<ReturnType<typeof openDatabase>>;

/** The database: embedded Postgres unless DATABASE_URL is set, the pools, migrations, partitions, the admin token. */
export async function openDatabase({ config, logger, clock, closers }: DatabaseWiring) {
  let connectionString = config.databaseUrl;
  if (!connectionString) {
    // In its own process group: a Ctrl-C in the terminal reaches this
    // process only, and Postgres is stopped by the first closer pushed, so
    // last, once every result has been written and the pools are closed.
    const embedded = await startEmbeddedPostgres({
      dataDir: config.dataDir,
      logger,
      port: config.embeddedPostgresPort,
      ownProcessGroup: true,
    });
    closers.push(() => embedded.stop());
    logger.info(
      { dataDir: config.dataDir, port: embedded.port },
      "started embedded Postgres on 127.0.0.1 (set DATABASE_URL to use your own)",
    );
    connectionString = embedded.url;
  }
  const pool = createPool({ connectionString, max: 20, logger });
  closers.push(() => closePool(pool));
  await runMigrations(pool);
  // One Postgres or Citus: the job table's driver, chosen once here and passed down.
  const jobTable = await openJobTable(pool, config.jobTable, logger);
  // The history's and attempts' partitions for today and the next days
  // (maintenance keeps creating them ahead).
  await createDayPartitions(pool, clock.now(), 3);
  // Admin reads get their own few connections: see RpcHandlersOptions.adminReads.
  const adminReadPool = createPool({
    connectionString,
    max: config.adminReads.connections,
    logger,
    applicationName: "waypost-admin-reads",
    statementTimeoutMs: config.adminReads.statementTimeoutMs,
  });
  closers.push(() => closePool(adminReadPool));
  const admin = await resolveAdminToken(config.adminToken, config.dataDir);
  if (admin.file) {
    logger.info({ file: admin.file }, admin.created ? "created an admin token; read it from this file" : "admin token is in this file");
  }
  return { connectionString, pool, adminReadPool, adminToken: admin.token, jobTable };
}
