// @ts-check
import { randomUUID } from "node:crypto";
import pg from "pg";
import { rpc } from "../lib/admin.mjs";
import { startCpuMeter } from "../lib/cpu.mjs";
import { postHooks } from "../lib/hook-load.mjs";
import { runScript } from "../lib/script.mjs";
import { startService } from "../lib/service.mjs";
import { report, sleep } from "../lib/stats.mjs";
import { checkTarget, ratioOf } from "../lib/targets.mjs";

const secret = "whsec_bench_0123456789abcdef";
/** A transform of about the size the templates have: a Stripe payment as a track. */
const transform = `function transform(request) {
  const event = request.body;
  const payment = event.data.object;
  return [{ type: "track", event: "Payment Succeeded", userId: payment.customer,
            properties: { amount: payment.amount / 100, currency: payment.currency, order: payment.metadata.order_id } }];
}`;

/**
 * Webhook sources: Stripe-signed requests (about 600 bytes) POSTed by 32
 * keep-alive loops to a webhook source's inbound URL in an `api` process
 * (receipt only: verified and stored), then the stored backlog turned into
 * calls by a `worker` process alone, timed until none is pending — once
 * with the default mapping and once with a transform, so the transform's
 * cost per request is the difference. Beside it, in the same run, a bare
 * server checking the same signature and inserting each request
 * (bench/bare-hook-receipt.mjs).
 * @param {{ db: import("../lib/postgres.mjs").Database, durationMs: number }} options
 */
export async function webhookSourcesScenario({ db, durationMs }) {
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  /** @type {Record<string, any>} */
  const phases = {};
  for (const variant of /** @type {const} */ (["default_mapping", "transform"])) {
    const api = await startService(db.url, { WAYPOST_ROLE: "api" });
    const { source } = await rpc(api.url, "SourceService/CreateSource", {
      source: {
        name: `stripe-${variant}`,
        kind: "SOURCE_KIND_WEBHOOK",
        webhook: { verifier: "HOOK_VERIFIER_STRIPE", secret, ...(variant === "transform" ? { transform } : {}) },
      },
    });
    const url = `${api.url}/hooks/${source.hookToken}`;
    await postHooks({ url, secret, durationMs: 1_000, tag: `warm-${variant}` });
    const receiptMeter = await startCpuMeter(pool, { service: api.pid });
    const load = await postHooks({ url, secret, durationMs, tag: variant });
    const receiptCpu = await receiptMeter.stop();
    const rss = api.peakRssMb();
    await api.stop();
    const stored = await countStatus(pool, source.id);
    const worker = await startService(db.url, { WAYPOST_ROLE: "worker" });
    const meter = await startCpuMeter(pool, { service: worker.pid });
    const start = performance.now();
    for (;;) {
      if ((await countStatus(pool, source.id, "pending")) === 0) break;
      await sleep(50);
    }
    const elapsed = performance.now() - start;
    const { used } = await meter.stop();
    await worker.stop();
    const processed = await countStatus(pool, source.id, "processed");
    phases[variant] = {
      accepted_per_s: Math.round((load.accepted / load.elapsedMs) * 1000),
      refused: load.refused,
      stored,
      receipt_cpu_us_per_request: {
        service: receiptCpu.used.service === null ? null : Math.round((receiptCpu.used.service * 1e6) / load.accepted),
        postgres: receiptCpu.used.postgres === null ? null : Math.round((receiptCpu.used.postgres * 1e6) / load.accepted),
      },
      processed,
      processed_per_s: Math.round((processed / elapsed) * 1000),
      processing_cpu_us_per_request: {
        service: used.service === null ? null : Math.round((used.service * 1e6) / processed),
        postgres: used.postgres === null ? null : Math.round((used.postgres * 1e6) / processed),
      },
      api_peak_rss_mb: rss,
    };
  }
  const bare = await runScript("bare-hook-receipt.mjs", [db.url, randomUUID(), secret, durationMs]);
  await pool.end();
  const rate = phases.default_mapping.accepted_per_s;
  const keepsUp = phases.default_mapping.processed_per_s >= rate;
  const transformCost =
    phases.transform.processing_cpu_us_per_request.service - phases.default_mapping.processing_cpu_us_per_request.service;
  report({
    scenario: "webhook-sources",
    verifier: "stripe",
    ...phases,
    rate,
    unit: "requests/s",
    bare_rate: bare.per_s,
    ratio: ratioOf(rate, bare.per_s),
    target: { rate: ">= 5000", met: rate >= 5_000 },
    processing_keeps_up: keepsUp,
    transform_cpu_us_per_request: transformCost,
  });
  checkTarget("webhook source: verified requests/s accepted into one source", rate, 5_000);
  checkTarget("webhook source: requests/s processed (default mapping), against accepted", phases.default_mapping.processed_per_s, rate);
  return { rate };
}

/**
 * @param {pg.Pool} pool
 * @param {string} sourceId
 * @param {string} [status]
 */
async function countStatus(pool, sourceId, status) {
  const { rows } = await pool.query(
    `SELECT count(*)::int AS n FROM hook_requests WHERE source_id = $1 ${status ? "AND status = $2" : ""}`,
    status ? [sourceId, status] : [sourceId],
  );
  return /** @type {number} */ (rows[0].n);
}
