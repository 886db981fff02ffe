// @ts-check
import pg from "pg";
import { createSourceAndDestination } from "../lib/admin.mjs";
import { trackingClient } from "../lib/load.mjs";
import { startService } from "../lib/service.mjs";
import { report, sleep, summarize } from "../lib/stats.mjs";

const wallNow = () => performance.timeOrigin + performance.now();

/**
 * Scenario 3: steady ingest with delivery running in the same service.
 * (a) latency from acknowledgement to arrival at the sink at 1,000 calls/s;
 * (b) the highest rate, stepping up, at which the queue does not grow.
 * @param {{ db: import("../lib/postgres.mjs").Database, sink: import("../lib/sink.mjs").Sink, stepMs: number, rates: number[], latencyMs: number, split?: boolean }} options
 */
export async function endToEndScenario({ db, sink, stepMs, rates, latencyMs, split = process.env.BENCH_E2E_SPLIT === "1" }) {
  // split: an api process and a worker process (the two roles), instead of one "all" process.
  const service = await startService(db.url, split ? { WAYPOST_ROLE: "api" } : {});
  const worker = split ? await startService(db.url, { WAYPOST_ROLE: "worker" }) : undefined;
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const { source, destination } = await createSourceAndDestination(service.url, `${sink.url}/ok`, { name: "e2e" });
  const client = trackingClient(service.url, source.writeKey);

  await sink.reset(true);
  /** @type {Map<string, number>} */
  const acks = new Map();
  await drive(client, 1_000, latencyMs, 10, (ids) => {
    const at = wallNow();
    for (const id of ids) acks.set(id, at);
  });
  await sink.waitForCount(acks.size, 30_000);
  /** @type {Array<[string, number]>} */
  const arrivals = await sink.arrivals();
  const latencies = arrivals.flatMap(([id, at]) => {
    const acked = acks.get(id);
    return acked === undefined ? [] : [at - acked];
  });
  report({
    scenario: "end_to_end_latency",
    processes: split ? "api + worker" : "all",
    rate_per_s: 1_000,
    calls: acks.size,
    ack_to_arrival_ms: summarize(latencies),
    target_p99_ms: 50,
  });

  await sink.reset(false);
  let best = 0;
  const steps = [];
  for (const rate of rates) {
    const step = await runStep(client, pool, sink, destination.id, rate, stepMs);
    steps.push(step);
    if (!step.sustained) break;
    best = rate;
  }
  client.close();
  const rss = Math.max(service.peakRssMb(), worker?.peakRssMb() ?? 0);
  await service.stop();
  await worker?.stop();
  await pool.end();
  report({
    scenario: "end_to_end_sustained",
    processes: split ? "api + worker" : "all",
    highest_sustained_per_s: best,
    steps,
    target_per_s: 10_000,
    server_peak_rss_mb: rss,
  });
  return { best, rss };
}

/**
 * Sends `rate` calls/s in batches of `batchSize` for `durationMs`; at most 64 requests in flight.
 * @param {import("../lib/load.mjs").TrackingClient} client
 * @param {number} rate
 * @param {number} durationMs
 * @param {number} batchSize
 * @param {(ids: string[]) => void} [onAck] called with each acknowledged batch's messageIds
 */
export async function drive(client, rate, durationMs, batchSize, onAck = () => {}) {
  const start = performance.now();
  const interval = (batchSize / rate) * 1000;
  let sent = 0;
  let inFlight = 0;
  /** @type {Set<Promise<void>>} */
  const pending = new Set();
  while (performance.now() - start < durationMs) {
    const due = Math.floor((performance.now() - start) / interval) + 1;
    while (sent < due && inFlight < 64) {
      sent++;
      inFlight++;
      const p = client
        .sendBatch(batchSize, "e2e")
        .then(onAck)
        .finally(() => {
          inFlight--;
          pending.delete(p);
        });
      pending.add(p);
    }
    await sleep(Math.max(1, Math.min(interval, 10)));
  }
  await Promise.all(pending);
  return { sent: sent * batchSize, elapsedMs: performance.now() - start };
}

/**
 * @param {import("../lib/load.mjs").TrackingClient} client
 * @param {pg.Pool} pool
 * @param {import("../lib/sink.mjs").Sink} sink
 * @param {string} destinationId
 * @param {number} rate
 * @param {number} stepMs
 */
async function runStep(client, pool, sink, destinationId, rate, stepMs) {
  const sinkBefore = await sink.count();
  const { sent, elapsedMs } = await drive(client, rate, stepMs, 100);
  const deliveredDuring = (await sink.count()) - sinkBefore;
  // A queue that keeps up drains its tail quickly; one that does not, grows.
  await sleep(2_000);
  const backlog = (await pool.query("SELECT count(*)::int AS n FROM delivery_queue WHERE destination_id = $1", [destinationId])).rows[0].n;
  const achieved = Math.round((sent / elapsedMs) * 1000);
  const sustained = achieved >= rate * 0.95 && backlog <= sent * 0.02;
  return {
    rate,
    achieved_ingest_per_s: achieved,
    delivered_per_s: Math.round((deliveredDuring / elapsedMs) * 1000),
    backlog_after_2s: backlog,
    sustained,
  };
}
