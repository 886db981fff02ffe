// @ts-check
import pg from "pg";
import { createSourceAndDestination, setEnabled } from "../lib/admin.mjs";
import { checkpoint, startCpuMeter } from "../lib/cpu.mjs";
import { queueDeliveries } from "../lib/queue.mjs";
import { runScript } from "../lib/script.mjs";
import { startService } from "../lib/service.mjs";
import { report } from "../lib/stats.mjs";
import { ratioOf } from "../lib/targets.mjs";
import { waitForStatus } from "./burn-down.mjs";
import { logBurnDown } from "./log-burn-down.mjs";

/**
 * Batched webhooks: `count` deliveries already queued for a webhook with
 * batch settings (`batch` calls per POST), burned down into the sink's
 * /batch, which counts the calls in each body; timed from enabling the
 * destination to the last call's arrival, then until every delivery is
 * recorded. Beside it, in the same run, a bare loop on the same tables
 * posting batches of the same size (bench/bare-batch-delivery.mjs). Then
 * the same webhook on the call log (./log-burn-down.mjs, a database of its
 * own), beside the bare cursor loader posting batches of the same size.
 * @param {{ db: import("../lib/postgres.mjs").Database, createDatabase: () => Promise<import("../lib/postgres.mjs").Database>,
 *           sink: import("../lib/sink.mjs").Sink, count: number, batch?: number }} options
 */
export async function batchedWebhooksScenario({ db, createDatabase, sink, count, batch = 100 }) {
  const service = await startService(db.url, {});
  const pool = new pg.Pool({ connectionString: db.url, max: 4 });
  const { source, destination } = await createSourceAndDestination(service.url, `${sink.url}/batch`, {
    name: "batched",
    enabled: false,
    batch: { maxCalls: batch, maxWaitMs: 100 },
  });
  await queueDeliveries(pool, { sourceId: source.id, destinationId: destination.id, count, prefix: "batched" });
  await sink.reset();
  const meter = await startCpuMeter(pool, { service: service.pid });
  const start = performance.now();
  await setEnabled(service.url, destination.id, true);
  const arrived = await sink.waitForCount(count, 600_000, "calls");
  const posts = await sink.count();
  await waitForStatus(pool, destination.id, count);
  const recorded = performance.now();
  const { used, statements } = await meter.stop();
  const rss = service.peakRssMb();
  await service.stop();
  const rate = Math.round((count / (arrived - start)) * 1000);
  const bare = await bareBatchBaseline(pool, db, sink, source.id, count, batch);
  await pool.end();
  report({
    scenario: "batched_webhooks",
    layout: "per_call",
    calls: count,
    calls_per_post: Math.round((count / posts) * 10) / 10,
    calls_per_s: rate,
    rate,
    unit: "calls/s",
    bare_rate: bare.per_s,
    ratio: ratioOf(rate, bare.per_s),
    target: { rate: ">= 40000", met: rate >= 40_000 },
    all_recorded_after_s: Math.round(recorded - start) / 1000,
    baseline_bare_batch_loop_per_s: bare.per_s,
    ratio_to_bare_loop: Math.round((rate / bare.per_s) * 100) / 100,
    cpu_us_per_call: {
      service: used.service === null ? null : Math.round((used.service * 1e6) / count),
      postgres: used.postgres === null ? null : Math.round((used.postgres * 1e6) / count),
    },
    server_peak_rss_mb: rss,
    postgres_statements: statements,
  });
  await sink.reset();
  const log = await logBurnDown({
    createDatabase,
    scenario: "batched_webhooks",
    kind: "batched-webhooks",
    count,
    goal: 40_000,
    createDestination: (url) =>
      createSourceAndDestination(url, `${sink.url}/batch`, {
        name: "batched-log",
        enabled: false,
        batch: { maxCalls: batch, maxWaitMs: 100 },
      }),
    delivered: () => sink.calls(),
    reset: async () => void (await sink.reset()),
    bareTarget: sink.url,
    perCallRate: rate,
  });
  return { rate, rss: Math.max(rss, log?.rss ?? 0) };
}

/**
 * @param {pg.Pool} pool
 * @param {import("../lib/postgres.mjs").Database} db
 * @param {import("../lib/sink.mjs").Sink} sink
 * @param {string} sourceId
 * @param {number} count
 * @param {number} batch
 */
async function bareBatchBaseline(pool, db, sink, sourceId, count, batch) {
  const { rows } = await pool.query(
    "INSERT INTO destinations (id, name, enabled, webhooks) VALUES (gen_random_uuid(), 'bare-batch', true, $1) RETURNING id",
    [JSON.stringify([{ url: `${sink.url}/batch`, headers: {} }])],
  );
  await queueDeliveries(pool, { sourceId, destinationId: rows[0].id, count, prefix: `barebatch${Date.now()}` });
  await pool.query("VACUUM delivery_queue");
  await checkpoint(pool);
  await sink.reset();
  const result = await runScript("bare-batch-delivery.mjs", [db.url, sink.url, count, batch, 4]);
  const arrived = await sink.calls();
  if (arrived < count) throw new Error(`bare batch loop: the sink saw ${arrived} of ${count} calls`);
  return result;
}
