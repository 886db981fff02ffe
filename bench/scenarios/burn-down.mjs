// @ts-check
import pg from "pg";
import { createSourceAndDestination, setEnabled } from "../lib/admin.mjs";
import { checkpoint, startCpuMeter, transactionCount } from "../lib/cpu.mjs";
import { addBareDestination, queueDeliveries } from "../lib/queue.mjs";
import { runScript } from "../lib/script.mjs";
import { startService } from "../lib/service.mjs";
import { report } from "../lib/stats.mjs";
import { checkTarget, ratioOf } from "../lib/targets.mjs";

/**
 * Scenario 2: `count` deliveries already queued; webhooks delivered per
 * second to the sink, signed, with attempts recorded. The destination is
 * created disabled, filled, then enabled, so the clock starts with a full
 * queue. Baseline in the same run: a bare claim → POST → mark-done loop in
 * its own process (bare-delivery.mjs: claims pipelined ahead of the senders,
 * completions batched on their own connection, prepared statements).
 * The tracing scenario (tracing.mjs) runs it with extra service
 * environment and a stored trace context on every message, labelled,
 * without the bare baseline.
 * @param {{ db: import("../lib/postgres.mjs").Database, sink: import("../lib/sink.mjs").Sink, count: number, concurrency?: number, env?: Record<string, string>, traceparent?: string, variant?: Record<string, unknown>, baseline?: boolean, entry?: string }} options
 */
export async function burnDownScenario({ db, sink, count, concurrency = 64, env = {}, traceparent, variant, baseline = true, entry }) {
  const service = await startService(db.url, { WAYPOST_DESTINATION_CONCURRENCY: String(concurrency), ...env }, { entry });
  const pool = new pg.Pool({ connectionString: db.url, max: 4 });
  const { source, destination } = await createSourceAndDestination(service.url, `${sink.url}/ok`, { name: "burn", enabled: false });
  await queueDeliveries(pool, { sourceId: source.id, destinationId: destination.id, count, prefix: "burn", traceparent });
  await sink.reset();
  const meter = await startCpuMeter(pool, { service: service.pid });
  const start = performance.now();
  await setEnabled(service.url, destination.id, true);
  const arrived = await sink.waitForCount(count);
  await waitForStatus(pool, destination.id, count);
  const recorded = performance.now();
  const { used, transactions, statements } = await meter.stop();
  const window = [service.secondsSinceStart(start), service.secondsSinceStart(recorded)];
  const rss = service.peakRssMb();
  const droppedSpans = variant ? await service.droppedSpans() : undefined;
  await service.stop();
  const rate = Math.round((count / (arrived - start)) * 1000);
  const cpuUsPerWebhook = used.service === null ? null : Math.round((used.service * 1e6) / count);
  if (!baseline) {
    await pool.end();
    report({
      scenario: "delivery_burn_down",
      ...variant,
      deliveries: count,
      webhooks_per_s: rate,
      all_recorded_after_s: Math.round(recorded - start) / 1000,
      cpu_us_per_webhook: { service: cpuUsPerWebhook, postgres: used.postgres === null ? null : Math.round((used.postgres * 1e6) / count) },
      spans_dropped: droppedSpans,
      server_peak_rss_mb: rss,
    });
    return { rate, rss, cpuUsPerWebhook };
  }
  const bareResult = await bareLoopBaseline(pool, db, sink, count, concurrency);
  const bare = bareResult.per_s;
  await pool.end();
  const ratio = ratioOf(rate, bare);
  const target = checkTarget("burn-down ratio to the bare delivery loop", ratio, 0.6);
  report({
    scenario: "burn-down",
    rate,
    unit: "webhooks/s",
    bare_rate: bare,
    ratio,
    target: { ratio: target.goal, met: target.met },
    deliveries: count,
    all_recorded_after_s: Math.round(recorded - start) / 1000,
    concurrency,
    cpu_us_per_webhook: {
      service: used.service === null ? null : Math.round((used.service * 1e6) / count),
      postgres: used.postgres === null ? null : Math.round((used.postgres * 1e6) / count),
    },
    transactions_per_1000_webhooks: Math.round((transactions * 1000) / count),
    profile_window_s: window,
    bare: {
      name: "bare-delivery",
      all_recorded_after_s: bareResult.all_recorded_after_s,
      cpu_us_per_delivery: { script: bareResult.script_cpu_us_per_delivery, postgres: bareResult.postgres_cpu_us_per_delivery },
      transactions_per_1000: bareResult.transactions_per_1000,
    },
    server_peak_rss_mb: rss,
    postgres_statements: statements,
  });
  return { rate, rss, cpuUsPerWebhook };
}

/**
 * Resolves once `count` of the destination's deliveries are in `status`.
 * @param {pg.Pool} pool
 * @param {string} destinationId
 * @param {number} count
 */
export async function waitForStatus(pool, destinationId, count, status = "delivered") {
  for (;;) {
    const n =
      // The history alone: a count through the deliveries view would also read the queue every 50 ms.
      (
        await pool.query("SELECT count(*)::int AS n FROM delivery_history WHERE destination_id = $1 AND status = $2", [
          destinationId,
          status,
        ])
      ).rows[0].n;
    if (n >= count) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The same work without Waypost's stages, attempt rows, metrics or caps, on
 * the same tables and sink: bench/bare-delivery.mjs, with `concurrency`
 * connections and four times as many requests in flight.
 * @param {pg.Pool} pool
 * @param {import("../lib/postgres.mjs").Database} db
 * @param {import("../lib/sink.mjs").Sink} sink
 * @param {number} count
 * @param {number} concurrency
 */
export async function bareLoopBaseline(pool, db, sink, count, concurrency) {
  const { rows } = await pool.query("SELECT id FROM sources LIMIT 1");
  const sourceId = rows[0].id;
  const destinationId = "00000000-0000-4000-8000-00000000b00e";
  await addBareDestination(pool, { id: destinationId, name: "bare", url: `${sink.url}/ok`, enabled: true });
  await queueDeliveries(pool, { sourceId, destinationId, count, prefix: `bareloop${Date.now()}` });
  await pool.query("VACUUM delivery_queue");
  await checkpoint(pool);
  await sink.reset();
  const before = await transactionCount(pool);
  const result = await runScript("bare-delivery.mjs", [db.url, sink.url, count, concurrency, concurrency * 4]);
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  result.transactions_per_1000 = Math.round((((await transactionCount(pool)) - before) * 1000) / count);
  const arrived = await sink.count();
  if (arrived < count) throw new Error(`bare loop: the sink saw ${arrived} of ${count} requests`);
  return result;
}
