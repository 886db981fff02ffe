// @ts-check
import pg from "pg";
import { createSourceAndDestination } from "../lib/admin.mjs";
import { checkpoint, startCpuMeter } from "../lib/cpu.mjs";
import { trackingClient } from "../lib/load.mjs";
import { runScript } from "../lib/script.mjs";
import { startService } from "../lib/service.mjs";
import { report, summarize } from "../lib/stats.mjs";
import { checkTarget, ratioOf } from "../lib/targets.mjs";

/**
 * Scenario 1: Batch RPCs of 100 calls from concurrent HTTP/2 clients into an
 * API process (deliveries are created, not sent). Baseline in the same run:
 * the same rows inserted by a bare script in its own process (bare-insert.mjs:
 * 4 connections, one prepared multi-row statement per batch, no RPC, no
 * decoding, no validation).
 * The tracing scenario (tracing.mjs) runs it with extra service
 * environment and request headers, labelled, without the bare baseline.
 * @param {{ db: import("../lib/postgres.mjs").Database, sink: import("../lib/sink.mjs").Sink, durationMs: number, concurrency?: number, batchSize?: number, env?: Record<string, string>, headers?: Record<string, string>, variant?: Record<string, unknown>, baseline?: boolean, entry?: string }} options
 */
export async function ingestScenario({
  db,
  sink,
  durationMs,
  concurrency = Number(process.env.BENCH_INGEST_CONCURRENCY ?? 8),
  batchSize = 100,
  env = {},
  headers = {},
  variant,
  baseline: withBaseline = true,
  entry,
}) {
  const service = await startService(db.url, { WAYPOST_ROLE: "api", ...env }, { entry });
  const { source } = await createSourceAndDestination(service.url, `${sink.url}/ok`, { name: "ingest" });
  const client = trackingClient(service.url, source.writeKey, { headers });
  const warmup = await runFor(client, 1_000, concurrency, batchSize); // warm-up: JIT, connections
  const pool = new pg.Pool({ connectionString: db.url, max: 1 });
  const meter = await startCpuMeter(pool, { service: service.pid });
  const window = [service.secondsSinceStart()];
  const { events, latencies, elapsedMs } = await runFor(client, durationMs, concurrency, batchSize);
  window.push(service.secondsSinceStart());
  const { used, transactions, statements } = await meter.stop();
  await pool.end();
  client.close();
  const rss = service.peakRssMb();
  const droppedSpans = variant ? await service.droppedSpans() : undefined;
  await service.stop();
  const eventsPerS = Math.round((events / elapsedMs) * 1000);
  if (!withBaseline) {
    report({
      scenario: "ingest",
      ...variant,
      events_per_s: eventsPerS,
      rpc_latency_ms: summarize(latencies),
      cpu_us_per_call: { service: perUnit(used.service, events), postgres: perUnit(used.postgres, events) },
      requests: events / batchSize,
      spans_dropped: droppedSpans,
      server_peak_rss_mb: rss,
    });
    return { eventsPerS, rss, cpuUsPerCall: perUnit(used.service, events) };
  }
  const bare = await bareInsertBaseline(db, source.id, durationMs, batchSize);
  const ratio = ratioOf(eventsPerS, bare.rows_per_s);
  const target = checkTarget("ingest ratio to the bare insert", ratio, 0.5);
  report({
    scenario: "ingest",
    rate: eventsPerS,
    unit: "calls/s",
    bare_rate: bare.rows_per_s,
    ratio,
    target: { ratio: target.goal, met: target.met },
    rpc_latency_ms: summarize(latencies),
    concurrency,
    batch_size: batchSize,
    duration_s: Math.round(elapsedMs) / 1000,
    calls_handled_with_warmup: warmup.events + events,
    cpu_us_per_call: { service: perUnit(used.service, events), postgres: perUnit(used.postgres, events) },
    transactions_per_1000_calls: Math.round((transactions * 1000) / events),
    profile_window_s: window,
    bare: { name: "bare-insert", script_pct_of_core: bare.script_cpu_pct, postgres_us_per_row: bare.postgres_cpu_us_per_row },
    server_peak_rss_mb: rss,
    postgres_statements: statements,
  });
  return { eventsPerS, rss, cpuUsPerCall: perUnit(used.service, events) };
}

/**
 * Sends Batches of `batchSize` from `concurrency` streams, each as soon as the last was answered, for `durationMs`.
 * @param {import("../lib/load.mjs").TrackingClient} client
 * @param {number} durationMs
 * @param {number} concurrency
 * @param {number} batchSize
 */
export async function runFor(client, durationMs, concurrency, batchSize) {
  /** @type {number[]} */
  const latencies = [];
  let events = 0;
  const start = performance.now();
  const end = start + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await client.sendBatch(batchSize, "ingest");
        latencies.push(performance.now() - t);
        events += batchSize;
      }
    }),
  );
  return { events, latencies, elapsedMs: performance.now() - start };
}

const perUnit = (/** @type {number | null} */ seconds, /** @type {number} */ units) =>
  seconds === null ? null : Math.round((seconds * 1e6) / units);

/**
 * The hardware's share: the same rows (a message and a delivery per call) from bench/bare-insert.mjs.
 * @param {import("../lib/postgres.mjs").Database} db
 * @param {string} sourceId
 * @param {number} durationMs
 * @param {number} batchSize
 */
export async function bareInsertBaseline(db, sourceId, durationMs, batchSize) {
  const pool = new pg.Pool({ connectionString: db.url, max: 1 });
  const destination = (await pool.query("SELECT destination_id FROM destination_sources WHERE source_id = $1", [sourceId])).rows[0]
    .destination_id;
  await checkpoint(pool);
  await pool.end();
  return runScript("bare-insert.mjs", [db.url, sourceId, destination, durationMs, batchSize, 4]);
}
