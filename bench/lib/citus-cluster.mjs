// @ts-check
// The Citus cluster a `--only=citus` run measures: DATABASE_URL is its
// coordinator (../shared/citus/cluster.sh starts one on loopback), and the
// workers are the nodes the coordinator's own database lists.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { postmasterPid } from "./node-cpu.mjs";

/**
 * @param {string} url
 * @param {string} sql
 * @param {unknown[]} [values]
 */
async function run(url, sql, values = []) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql, values);
  } finally {
    await client.end();
  }
}

/**
 * @param {string} base
 * @param {{ host?: string, port?: number, database?: string }} at
 */
function urlAt(base, { host, port, database }) {
  const url = new URL(base);
  if (host) url.hostname = host;
  if (port) url.port = String(port);
  if (database) url.pathname = `/${database}`;
  return url.toString();
}

/**
 * @param {string} coordinatorUrl
 */
export async function openCitusCluster(coordinatorUrl) {
  const installed = await run(coordinatorUrl, "SELECT extversion FROM pg_extension WHERE extname = 'citus'");
  if (installed.rows.length === 0) {
    throw new Error("the citus scenario needs DATABASE_URL at a Citus coordinator (see docs/scaling.md: ../shared/citus/cluster.sh)");
  }
  const coordinator = new URL(coordinatorUrl);
  const workers = (await run(coordinatorUrl, "SELECT nodename, nodeport FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeport")).rows;
  const nodes = [
    { name: "coordinator", host: coordinator.hostname, port: Number(coordinator.port || 5432) },
    ...workers.map((w, i) => ({ name: `worker_${i + 1}`, host: w.nodename, port: Number(w.nodeport) })),
  ];
  const postmasters = Object.fromEntries(
    await Promise.all(nodes.map(async (n) => [n.name, await postmasterPid(urlAt(coordinatorUrl, { host: n.host, port: n.port }))])),
  );
  return {
    citusVersion: installed.rows[0].extversion,
    nodes,
    /** @type {Record<string, number>} each node's postmaster pid, for its CPU */
    postmasters,
    /**
     * A database of a scenario's own: on the coordinator alone as a plain Postgres database
     * (`distributed: false`), or on every node with the extension and the workers registered, for Waypost
     * to convert at start (WAYPOST_JOB_TABLE=citus).
     * @param {{ distributed: boolean }} options
     * @returns {Promise<{ url: string, drop(): Promise<void> }>}
     */
    async createDatabase({ distributed }) {
      const name = `waypost_bench_${randomBytes(4).toString("hex")}`;
      const on = distributed ? nodes : nodes.slice(0, 1);
      for (const node of on) {
        await run(urlAt(coordinatorUrl, { host: node.host, port: node.port, database: "postgres" }), `CREATE DATABASE ${name}`);
        if (distributed) await run(urlAt(coordinatorUrl, { host: node.host, port: node.port, database: name }), "CREATE EXTENSION citus");
      }
      const url = urlAt(coordinatorUrl, { database: name });
      if (distributed) {
        await run(url, "SELECT citus_set_coordinator_host($1, $2)", [nodes[0]?.host, nodes[0]?.port]);
        for (const worker of nodes.slice(1)) await run(url, "SELECT citus_add_node($1, $2)", [worker.host, worker.port]);
      }
      return {
        url,
        async drop() {
          for (const node of [...on].reverse()) {
            await run(
              urlAt(coordinatorUrl, { host: node.host, port: node.port, database: "postgres" }),
              `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`,
            );
          }
        },
      };
    },
  };
}
