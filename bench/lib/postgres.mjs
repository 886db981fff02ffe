// The benchmark's Postgres: a fresh database on DATABASE_URL's server, or an
// embedded Postgres when DATABASE_URL is unset (as `npm start` would use).
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";

export async function openDatabase() {
  let serverUrl = process.env.DATABASE_URL;
  let embedded;
  let dir;
  if (!serverUrl) {
    const { startEmbeddedPostgres } = await import("../../dist/src/db/embedded.js");
    const { createLogger } = await import("../../dist/src/logger.js");
    dir = mkdtempSync(path.join(tmpdir(), "waypost-bench-pg-"));
    embedded = await startEmbeddedPostgres({ dataDir: dir, logger: createLogger("silent") });
    serverUrl = embedded.url;
  }
  const name = `waypost_bench_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const version = (await admin.query("SHOW server_version")).rows[0].server_version;
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    postgresVersion: version,
    embedded: Boolean(embedded),
    async drop() {
      const client = new pg.Client({ connectionString: serverUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
      await embedded?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
