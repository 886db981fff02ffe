import { randomBytes } from "node:crypto";
import { convertToCitus } from "../../src/db/citus/convert.js";
import { runMigrations } from "../../src/db/migrate.js";
import { createPool, type Pool } from "../../src/db/pool.js";
import { withClient } from "./database.js";

/**
 * Tests that need a Citus cluster read WAYPOST_TEST_CITUS_URL (the
 * coordinator, e.g. postgres://postgres@127.0.0.1:39500/postgres, as
 * ../shared/citus/cluster.sh starts it). CI cannot build Citus, so there
 * they are skipped, and say so.
 */
export const citusUrl: string | undefined = process.env.WAYPOST_TEST_CITUS_URL || undefined;

/** Why a Citus suite did not run, for its title (empty when it runs). */
export const citusSkipReason = citusUrl ? "" : " (skipped: WAYPOST_TEST_CITUS_URL is not set; see docs/scaling.md)";

if (!citusUrl && process.env.VITEST_WORKER_ID === "1") {
  process.stdout.write("Citus tests skipped: WAYPOST_TEST_CITUS_URL is not set\n");
}

function withDatabase(url: string, name: string, host?: string, port?: number): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  if (host) u.hostname = host;
  if (port) u.port = String(port);
  return u.toString();
}

export interface CitusTestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/**
 * A database of the test file's own on every node of the cluster, with the
 * citus extension and the workers registered: Citus keeps its metadata per
 * database, so each one is a cluster of its own. With `migrated`, Waypost's
 * migrations are applied and the tables converted to the distributed layout.
 */
export async function createCitusTestDatabase(
  options: { migrated?: boolean; convert?: boolean; shardCount?: number } = {},
): Promise<CitusTestDatabase> {
  if (!citusUrl) throw new Error("WAYPOST_TEST_CITUS_URL is not set");
  const name = `waypost_citus_${randomBytes(5).toString("hex")}`;
  const coordinator = new URL(citusUrl);
  const workers = await withClient(
    citusUrl,
    async (client) =>
      (
        await client.query<{ nodename: string; nodeport: number }>(
          "SELECT nodename, nodeport FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeport",
        )
      ).rows,
  );
  const nodes = [
    { host: coordinator.hostname, port: Number(coordinator.port || 5432) },
    ...workers.map((w) => ({ host: w.nodename, port: w.nodeport })),
  ];
  for (const node of nodes) {
    await withClient(withDatabase(citusUrl, "postgres", node.host, node.port), (client) => client.query(`CREATE DATABASE ${name}`));
    await withClient(withDatabase(citusUrl, name, node.host, node.port), (client) => client.query("CREATE EXTENSION citus"));
  }
  const url = withDatabase(citusUrl, name);
  await withClient(url, async (client) => {
    await client.query("SELECT citus_set_coordinator_host($1, $2)", [nodes[0]!.host, nodes[0]!.port]);
    for (const worker of workers) await client.query("SELECT citus_add_node($1, $2)", [worker.nodename, worker.nodeport]);
  });
  if (options.migrated !== false) {
    const pool = createPool({ connectionString: url, max: 2 });
    try {
      await runMigrations(pool);
    } finally {
      await pool.end();
    }
    if (options.convert !== false) {
      await withClient(url, (client) => convertToCitus(client, { shardCount: options.shardCount ?? 8 }));
    }
  }
  return {
    url,
    name,
    async drop() {
      // A node restarted mid-commit keeps its prepared transactions until the
      // coordinator's recovery (once a minute) ends them: they would hold the database.
      await withClient(url, (client) => client.query("SELECT recover_prepared_transactions()"));
      for (const node of nodes.reverse()) {
        await withClient(withDatabase(citusUrl!, "postgres", node.host, node.port), (client) =>
          client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
        );
      }
    },
  };
}

/** A converted Citus database of the test file's own, with a pool on it. */
export async function openCitusTestDatabase(
  options: { max?: number } = {},
): Promise<{ database: CitusTestDatabase; pool: Pool; close(): Promise<void> }> {
  const database = await createCitusTestDatabase();
  const pool = createPool({ connectionString: database.url, max: options.max ?? 10 });
  return {
    database,
    pool,
    async close() {
      await pool.end();
      await database.drop();
    },
  };
}
