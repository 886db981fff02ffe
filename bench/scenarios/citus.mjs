// @ts-check
import pg from "pg";
import { createSourceAndDestination, rpc } from "../lib/admin.mjs";
import { openCitusCluster } from "../lib/citus-cluster.mjs";
import { trackingClient } from "../lib/load.mjs";
import { startNodeCpuMeter } from "../lib/node-cpu.mjs";
import { startService } from "../lib/service.mjs";
import { report, summarize } from "../lib/stats.mjs";
import { runFor } from "./ingest.mjs";

/** The two layouts, in the same run, on the same nodes. */
const layouts = [
  { name: "postgres (1 node)", distributed: false },
  { name: "citus (coordinator + 2 workers)", distributed: true },
];

/**
 * Ingest and burn-down on one Postgres and on Citus, in one run: DATABASE_URL
 * is the Citus coordinator, and the single-Postgres layout is a plain
 * database on that same server (no extension in it), so both use the same
 * PostgreSQL build and settings. For each layout: Batch RPCs of 100 calls
 * from 8 streams at full speed into an api process (nothing delivers there:
 * every call queues one delivery for each of the source's four
 * destinations), then a worker process burns the queue down into the sink.
 * Each phase reports the CPU every node used (the
 * whole server: backends, Citus's daemons, WAL writer), the service's, and
 * both per call or per webhook. On one machine the nodes share its cores:
 * the figures to read are the costs per unit and where the work lands, not
 * the rates. One JSON line per layout.
 * @param {{ coordinatorUrl: string, sink: import("../lib/sink.mjs").Sink, durationMs: number, shardCount?: number, concurrency?: number, batchSize?: number, destinations?: number }} options
 */
export async function citusScenario({
  coordinatorUrl,
  sink,
  durationMs,
  shardCount = 8,
  concurrency = 8,
  batchSize = 100,
  destinations = 4,
}) {
  const cluster = await openCitusCluster(coordinatorUrl);
  const results = [];
  for (const layout of layouts) {
    const db = await cluster.createDatabase({ distributed: layout.distributed });
    try {
      results.push(await measureLayout({ cluster, db, sink, layout, durationMs, shardCount, concurrency, batchSize, destinations }));
    } finally {
      await db.drop();
    }
  }
  return results;
}

/**
 * @param {{ cluster: Awaited<ReturnType<typeof openCitusCluster>>, db: { url: string }, sink: import("../lib/sink.mjs").Sink,
 *           layout: { name: string, distributed: boolean }, durationMs: number, shardCount: number, concurrency: number, batchSize: number, destinations: number }} options
 */
async function measureLayout({ cluster, db, sink, layout, durationMs, shardCount, concurrency, batchSize, destinations }) {
  /** @type {Record<string, string>} */
  const env = layout.distributed ? { WAYPOST_JOB_TABLE: "citus", WAYPOST_CITUS_SHARD_COUNT: String(shardCount) } : {};
  // Ingest into an api process (nothing delivers: the calls queue), then a worker process burns the queue down.
  const api = await startService(db.url, { ...env, WAYPOST_ROLE: "api" });
  /** @type {import("../lib/service.mjs").Service | undefined} */
  let worker;
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const nodes = layout.distributed ? cluster.nodes : cluster.nodes.slice(0, 1);
  /** @type {Record<string, { postmaster?: number, pid?: number }>} */
  const nodeCpu = Object.fromEntries(nodes.map((n) => [n.name, { postmaster: cluster.postmasters[n.name] }]));
  try {
    // Four destinations of one source: each call is four deliveries, and on Citus each destination's work is one shard's.
    const { source } = await createSourceAndDestination(api.url, `${sink.url}/ok`, { name: "citus-0" });
    for (let i = 1; i < destinations; i++) {
      await rpc(api.url, "DestinationService/CreateDestination", {
        destination: { name: `citus-${i}`, sourceIds: [source.id], enabled: true, webhooks: [{ url: `${sink.url}/ok` }] },
      });
    }
    const client = trackingClient(api.url, source.writeKey);
    await runFor(client, 1_000, concurrency, batchSize); // warm-up
    const ingestMeter = startNodeCpuMeter({ ...nodeCpu, waypost: { pid: api.pid } });
    const { events, latencies, elapsedMs } = await runFor(client, durationMs, concurrency, batchSize);
    const ingestCpu = ingestMeter.stop();
    client.close();
    const queued = Number((await pool.query("SELECT count(*) AS n FROM delivery_queue")).rows[0].n);

    await sink.reset();
    // The window includes the worker's start (about a second, the same for both layouts).
    const start = performance.now();
    worker = await startService(db.url, { WAYPOST_ROLE: "worker" });
    const burnMeter = startNodeCpuMeter({ ...nodeCpu, waypost: { pid: worker.pid } });
    const arrived = await sink.waitForCount(queued);
    const burnCpu = burnMeter.stop();

    const perUnit = (/** @type {Record<string, number | null>} */ used, /** @type {number} */ units) =>
      Object.fromEntries(Object.entries(used).map(([name, s]) => [name, s === null ? null : Math.round((s * 1e6) / Math.max(1, units))]));
    const pct = (/** @type {Record<string, number | null>} */ used, /** @type {number} */ seconds) =>
      Object.fromEntries(Object.entries(used).map(([name, s]) => [name, s === null ? null : Math.round((s / seconds) * 100)]));
    const result = {
      scenario: "citus",
      layout: layout.name,
      citus: layout.distributed ? cluster.citusVersion : null,
      shards_per_table: layout.distributed ? shardCount : null,
      destinations,
      ingest: {
        concurrency,
        batch_size: batchSize,
        calls_per_s: Math.round((events / elapsedMs) * 1000),
        rpc_latency_ms: summarize(latencies),
        cpu_pct_of_core: pct(ingestCpu.used, ingestCpu.seconds),
        deliveries_queued: queued,
        cpu_us_per_call: perUnit(ingestCpu.used, events),
      },
      burn_down: {
        deliveries: queued,
        webhooks_per_s: Math.round((queued / (arrived - start)) * 1000),
        cpu_pct_of_core: pct(burnCpu.used, burnCpu.seconds),
        cpu_us_per_webhook: perUnit(burnCpu.used, queued),
      },
      server_peak_rss_mb: Math.max(api.peakRssMb(), worker.peakRssMb()),
    };
    report(result);
    return result;
  } finally {
    await pool.end();
    await worker?.stop();
    await api.stop();
  }
}
