// @ts-check
import pg from "pg";
import { createSourceAndDestination, setEnabled } from "../lib/admin.mjs";
import { percentOfCore, startCpuMeter } from "../lib/cpu.mjs";
import { trackingClient } from "../lib/load.mjs";
import { queueDeliveries } from "../lib/queue.mjs";
import { startService } from "../lib/service.mjs";
import { report, sleep, summarize } from "../lib/stats.mjs";
import { runFor } from "./ingest.mjs";

/** The process layouts compared, all in the same run on the same machine. */
export const topologies = [
  { name: "all", roles: ["all"] },
  { name: "api + worker", roles: ["api", "worker"] },
  { name: "api + 2 workers", roles: ["api", "worker", "worker"] },
];

/**
 * What adding processes gives on one machine. For each layout, on a fresh
 * database: (a) a burn-down of `deliveries` queued webhooks, (b) Batch load
 * at full speed (8 streams of 100 calls) with delivery running, both rates
 * reported. Each phase reports the CPU every process used (service
 * processes, this database's Postgres backends, the sink, the load
 * generator), so the cost per call and per webhook can be read per role.
 * One JSON line per layout.
 * @param {{ createDatabase: () => Promise<import("../lib/postgres.mjs").Database>, sink: import("../lib/sink.mjs").Sink, deliveries: number, durationMs: number, concurrency?: number, batchSize?: number }} options
 */
export async function scalingScenario({ createDatabase, sink, deliveries, durationMs, concurrency = 8, batchSize = 100 }) {
  const results = [];
  for (const topology of topologies) {
    const db = await createDatabase();
    try {
      results.push(await measureTopology({ db, sink, topology, deliveries, durationMs, concurrency, batchSize }));
    } finally {
      await db.drop();
    }
  }
  return results;
}

/**
 * @param {{ db: import("../lib/postgres.mjs").Database, sink: import("../lib/sink.mjs").Sink, topology: { name: string, roles: string[] }, deliveries: number, durationMs: number, concurrency: number, batchSize: number }} options
 */
async function measureTopology({ db, sink, topology, deliveries, durationMs, concurrency, batchSize }) {
  /** @type {import("../lib/service.mjs").Service[]} */
  const processes = [];
  for (const role of topology.roles) processes.push(await startService(db.url, { WAYPOST_ROLE: role }));
  const front = processes[0];
  if (!front) throw new Error("a topology has at least one process");
  /** @type {Record<string, number | undefined>} */
  const named = {};
  topology.roles.forEach((role, i) => {
    named[role in named ? `${role}_${i + 1}` : role] = processes[i]?.pid;
  });
  named.sink = sink.pid;
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  try {
    // (a) burn-down: a full queue, no ingest.
    const burn = await createSourceAndDestination(front.url, `${sink.url}/ok`, { name: "scale-burn", enabled: false });
    await queueDeliveries(pool, { sourceId: burn.source.id, destinationId: burn.destination.id, count: deliveries, prefix: "scale" });
    await sink.reset();
    const burnMeter = await startCpuMeter(pool, named);
    const start = performance.now();
    await setEnabled(front.url, burn.destination.id, true);
    const arrived = await sink.waitForCount(deliveries);
    const burnCpu = await burnMeter.stop();
    const burnRate = Math.round((deliveries / (arrived - start)) * 1000);
    await waitForBacklog(pool, burn.destination.id, 0);

    // (b) ingest at full speed with delivery running beside it.
    const mixed = await createSourceAndDestination(front.url, `${sink.url}/ok`, { name: "scale-mixed" });
    const client = trackingClient(front.url, mixed.source.writeKey);
    await runFor(client, 1_000, concurrency, batchSize); // warm-up
    await sink.reset();
    const mixedMeter = await startCpuMeter(pool, named);
    const { events, latencies, elapsedMs } = await runFor(client, durationMs, concurrency, batchSize);
    const delivered = await sink.count();
    const mixedCpu = await mixedMeter.stop();
    client.close();
    const backlog = await countBacklog(pool, mixed.destination.id);
    const ingestRate = Math.round((events / elapsedMs) * 1000);
    const deliveredRate = Math.round((delivered / elapsedMs) * 1000);

    const perUnit = (/** @type {Record<string, number | null>} */ used, /** @type {number} */ units) =>
      Object.fromEntries(Object.entries(used).map(([name, s]) => [name, s === null ? null : Math.round((s * 1e6) / Math.max(1, units))]));
    const result = {
      scenario: "scaling",
      processes: topology.name,
      burn_down: {
        deliveries,
        webhooks_per_s: burnRate,
        cpu_pct_of_core: percentOfCore(burnCpu.used, burnCpu.seconds),
        cpu_us_per_webhook: perUnit(burnCpu.used, deliveries),
      },
      ingest_with_delivery: {
        concurrency,
        batch_size: batchSize,
        calls_per_s: ingestRate,
        rpc_latency_ms: summarize(latencies),
        delivered_per_s: deliveredRate,
        backlog_after: backlog,
        cpu_pct_of_core: percentOfCore(mixedCpu.used, mixedCpu.seconds),
        cpu_us_per_call: perUnit(mixedCpu.used, events),
      },
      server_peak_rss_mb: Math.max(...processes.map((p) => p.peakRssMb())),
    };
    report(result);
    return result;
  } finally {
    await pool.end();
    for (const p of processes) await p.stop();
  }
}

/**
 * @param {pg.Pool} pool
 * @param {string} destinationId
 * @returns {Promise<number>}
 */
async function countBacklog(pool, destinationId) {
  const { rows } = await pool.query("SELECT count(*)::int AS n FROM delivery_queue WHERE destination_id = $1", [destinationId]);
  return rows[0].n;
}

/**
 * @param {pg.Pool} pool
 * @param {string} destinationId
 * @param {number} atMost
 */
async function waitForBacklog(pool, destinationId, atMost, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  while ((await countBacklog(pool, destinationId)) > atMost) {
    if (Date.now() > deadline) throw new Error("the burn-down's results were not all recorded in time");
    await sleep(50);
  }
}
