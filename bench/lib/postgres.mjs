// @ts-check
// The benchmark's Postgres: DATABASE_URL's server, or an embedded Postgres
// when DATABASE_URL is unset (as `npm start` would use). Each scenario gets
// a fresh database, so none sees another's rows.
import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";

/**
 * A database of its own for one scenario.
 * @typedef {{ url: string, drop(): Promise<unknown> }} Database
 */

export async function openPostgres() {
  let serverUrl = process.env.DATABASE_URL;
  /** @type {{ url: string, stop(): Promise<void> } | undefined} */
  let embedded;
  /** @type {string | undefined} */
  let dir;
  if (!serverUrl) {
    const { startEmbeddedPostgres } = await import("../../dist/src/db/embedded.js");
    const { createLogger } = await import("../../dist/src/logger.js");
    dir = mkdtempSync(path.join(tmpdir(), "waypost-bench-pg-"));
    chmodSync(dir, 0o755); // initdb runs as an unprivileged user when we are root

    embedded = await startEmbeddedPostgres({ dataDir: dir, logger: createLogger("silent") });
    serverUrl = embedded.url;
  }
  const admin = async (/** @type {string} */ sql) => {
    const client = new pg.Client({ connectionString: serverUrl });
    await client.connect();
    try {
      return await client.query(sql);
    } finally {
      await client.end();
    }
  };
  const version = (await admin("SHOW server_version")).rows[0].server_version;
  return {
    postgresVersion: version,
    embedded: Boolean(embedded),
    /** The server's own URL (a scenario that keeps a database across runs makes it there). */
    serverUrl,
    /** @returns {Promise<Database>} */
    async createDatabase() {
      const name = `waypost_bench_${randomBytes(4).toString("hex")}`;
      await admin(`CREATE DATABASE ${name}`);
      const url = new URL(serverUrl);
      url.pathname = `/${name}`;
      return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
    },
    async close() {
      await embedded?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Kept for scripts that want one database and nothing else. */
export async function openDatabase() {
  const server = await openPostgres();
  const db = await server.createDatabase();
  return {
    ...db,
    postgresVersion: server.postgresVersion,
    embedded: server.embedded,
    async drop() {
      await db.drop();
      await server.close();
    },
  };
}
