import { readFile } from "node:fs/promises";
import path from "node:path";
import pg from "pg";
import { clusterDirectoryCandidates, startEmbeddedPostgres } from "../db/embedded.js";
import { createLogger } from "../logger.js";
import { describeDatabaseUrl } from "../startup-error.js";
import { CommandFailure } from "./errors.js";

/** The service's database, reached directly (backup, restore): one connection. */
export interface DatabaseTarget {
  client: pg.Client;
  /** Where it is, without the password: for messages. */
  where: string;
  close(): Promise<void>;
}

/**
 * The database Waypost uses, found as the server finds it: --database-url,
 * else DATABASE_URL, else the embedded Postgres of WAYPOST_DATA_DIR
 * (./.waypost). A running Waypost's embedded Postgres is reached where it
 * listens; with none running it is started here for the command (creating
 * the cluster in a new data directory, for a restore) and stopped after.
 */
export async function openDatabaseTarget(flagUrl: string | undefined, env: NodeJS.ProcessEnv): Promise<DatabaseTarget> {
  const url = flagUrl ?? env.DATABASE_URL;
  if (url) return connect(url, describeDatabaseUrl(url), async () => {});
  const dataDir = path.resolve(env.WAYPOST_DATA_DIR ?? ".waypost");
  const running = await runningEmbeddedUrl(dataDir);
  if (running) return connect(running, `the embedded Postgres of the running Waypost in ${dataDir}`, async () => {});
  const port = env.WAYPOST_EMBEDDED_POSTGRES_PORT ? Number(env.WAYPOST_EMBEDDED_POSTGRES_PORT) : undefined;
  const embedded = await startEmbeddedPostgres({ dataDir, logger: createLogger("silent"), port });
  try {
    return await connect(embedded.url, `the embedded Postgres in ${dataDir}`, () => embedded.stop());
  } catch (error) {
    await embedded.stop();
    throw error;
  }
}

async function connect(url: string, where: string, stop: () => Promise<void>): Promise<DatabaseTarget> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
  } catch (error) {
    throw new CommandFailure(`cannot connect to the database at ${where}: ${error instanceof Error ? error.message : String(error)}`);
  }
  return {
    client,
    where,
    close: async () => {
      await client.end().catch(() => {});
      await stop();
    },
  };
}

/**
 * The URL of the embedded Postgres a running Waypost started on this data
 * directory: its port is in the cluster's postmaster.pid (the fourth line)
 * and its password beside the cluster. Undefined when none answers there.
 */
async function runningEmbeddedUrl(dataDir: string): Promise<string | undefined> {
  const password = await readFile(path.join(dataDir, "postgres-password"), "utf8").catch(() => undefined);
  if (password === undefined) return undefined;
  for (const cluster of clusterDirectoryCandidates(dataDir)) {
    const pid = await readFile(path.join(cluster, "postmaster.pid"), "utf8").catch(() => undefined);
    const port = Number(pid?.split("\n")[3]);
    if (!Number.isInteger(port) || port <= 0) continue;
    const url = `postgres://postgres:${encodeURIComponent(password.trim())}@127.0.0.1:${port}/postgres`;
    const probe = new pg.Client({ connectionString: url });
    const answers = await probe.connect().then(
      () => true,
      () => false,
    );
    await probe.end().catch(() => {});
    if (answers) return url;
  }
  return undefined;
}
