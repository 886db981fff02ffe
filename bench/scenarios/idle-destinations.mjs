// @ts-check
import pg from "pg";
import { createSourceAndDestination, rpc } from "../lib/admin.mjs";
import { openCitusCluster } from "../lib/citus-cluster.mjs";
import { trackingClient } from "../lib/load.mjs";
import { postmasterPid, startNodeCpuMeter } from "../lib/node-cpu.mjs";
import { startService } from "../lib/service.mjs";
import { report } from "../lib/stats.mjs";

/**
 * @typedef {{ name: string, env: Record<string, string>, createDatabase(): Promise<{ url: string, drop(): Promise<unknown> }>,
 *             nodes(url: string): Promise<Record<string, { postmaster?: number }>> }} Layout
 */

/**
 * What idle destinations cost a busy one's burn-down. For each layout (one
 * Postgres; Citus too when DATABASE_URL is a coordinator) and for 0 and
 * `idle` enabled destinations that never get a call, on a fresh database:
 * `deliveries` calls of one source are queued through an api process for
 * its one destination, then a worker process burns them down into the sink.
 * The 0-idle run is the same run's baseline: one JSON line per run, then a
 * line per layout with the rate of `idle` over 0 (the goal: idle
 * destinations cost under 10 % of the busy one's rate).
 * `entry` runs another build's dist/server.js (a before/after comparison).
 * @param {{ serverUrl: string, createDatabase: () => Promise<{ url: string, drop(): Promise<unknown> }>, sink: import("../lib/sink.mjs").Sink,
 *           deliveries: number, idle?: number, entry?: string }} options
 */
export async function idleDestinationsScenario({ serverUrl, createDatabase, sink, deliveries, idle = 200, entry }) {
  const layouts = await layoutsAt(serverUrl, createDatabase);
  const results = [];
  for (const layout of layouts) {
    /** @type {Record<number, number>} */
    const rates = {};
    for (const idleCount of [0, idle]) {
      const db = await layout.createDatabase();
      try {
        const result = await measure({ layout, db, sink, deliveries, idle: idleCount, entry });
        rates[idleCount] = result.webhooks_per_s;
        results.push(result);
      } finally {
        await db.drop();
      }
    }
    const ratio = (rates[idle] ?? 0) / Math.max(1, rates[0] ?? 0);
    report({
      scenario: "idle-destinations",
      layout: layout.name,
      idle_destinations: idle,
      webhooks_per_s: rates[idle],
      baseline_webhooks_per_s: rates[0],
      ratio: Math.round(ratio * 1000) / 1000,
      target_ratio: 0.9,
      met: ratio >= 0.9,
    });
  }
  return results;
}

/**
 * One Postgres always; Citus beside it when `serverUrl` is a coordinator (a plain database on that same server is the one Postgres).
 * @param {string} serverUrl
 * @param {() => Promise<{ url: string, drop(): Promise<unknown> }>} createDatabase
 * @returns {Promise<Layout[]>}
 */
async function layoutsAt(serverUrl, createDatabase) {
  const single = {
    name: "postgres (1 node)",
    env: {},
    createDatabase,
    nodes: async (/** @type {string} */ url) => ({ postgres: { postmaster: await postmasterPid(url) } }),
  };
  let cluster;
  try {
    cluster = await openCitusCluster(serverUrl);
  } catch {
    return [single];
  }
  const postmasters = cluster.postmasters;
  return [
    single,
    {
      name: "citus (coordinator + 2 workers)",
      env: { WAYPOST_JOB_TABLE: "citus", WAYPOST_CITUS_SHARD_COUNT: "8" },
      createDatabase: () => cluster.createDatabase({ distributed: true }),
      nodes: async () => Object.fromEntries(cluster.nodes.map((n) => [n.name, { postmaster: postmasters[n.name] }])),
    },
  ];
}

/**
 * @param {{ layout: Layout, db: { url: string }, sink: import("../lib/sink.mjs").Sink, deliveries: number, idle: number, entry?: string }} options
 */
async function measure({ layout, db, sink, deliveries, idle, entry }) {
  const api = await startService(db.url, { ...layout.env, WAYPOST_ROLE: "api" }, { entry });
  /** @type {import("../lib/service.mjs").Service | undefined} */
  let worker;
  const pool = new pg.Pool({ connectionString: db.url, max: 1 });
  try {
    const { source } = await createSourceAndDestination(api.url, `${sink.url}/ok`, { name: "busy" });
    // The idle destinations: enabled, of a source that gets no calls.
    const { source: quiet } = await rpc(api.url, "SourceService/CreateSource", { source: { name: "quiet" } });
    for (let i = 0; i < idle; i++) {
      await rpc(api.url, "DestinationService/CreateDestination", {
        destination: { name: `idle-${i}`, sourceIds: [quiet.id], enabled: true, webhooks: [{ url: `${sink.url}/ok` }] },
      });
    }
    const client = trackingClient(api.url, source.writeKey);
    await Promise.all(
      Array.from({ length: 4 }, async (_, stream) => {
        for (let sent = stream * 100; sent < deliveries; sent += 400) await client.sendBatch(Math.min(100, deliveries - sent), "idle");
      }),
    );
    client.close();
    const queued = Number((await pool.query("SELECT count(*) AS n FROM delivery_queue")).rows[0].n);

    await sink.reset();
    const nodes = await layout.nodes(db.url);
    // The window includes the worker's start (about a second, the same for every run).
    const start = performance.now();
    worker = await startService(db.url, { WAYPOST_ROLE: "worker" }, { entry });
    const meter = startNodeCpuMeter({ ...nodes, waypost: { pid: worker.pid } });
    const arrived = await sink.waitForCount(queued);
    const cpu = meter.stop();
    const result = {
      scenario: "idle-destinations",
      layout: layout.name,
      idle_destinations: idle,
      deliveries: queued,
      webhooks_per_s: Math.round((queued / (arrived - start)) * 1000),
      cpu_us_per_webhook: Object.fromEntries(
        Object.entries(cpu.used).map(([name, s]) => [name, s === null ? null : Math.round((s * 1e6) / Math.max(1, queued))]),
      ),
    };
    report(result);
    return result;
  } finally {
    await pool.end();
    await worker?.stop();
    await api.stop();
  }
}
