// @ts-check
import { randomUUID } from "node:crypto";
import pg from "pg";
import { rpc, setEnabled } from "../lib/admin.mjs";
import { startCpuMeter } from "../lib/cpu.mjs";
import { addBareDestination, queueDeliveries } from "../lib/queue.mjs";
import { startService } from "../lib/service.mjs";
import { report } from "../lib/stats.mjs";
import { runScript } from "../lib/script.mjs";
import { checkTarget, ratioOf } from "../lib/targets.mjs";
import { waitForStatus } from "./burn-down.mjs";

/**
 * The integration kind's burn-down: `count` deliveries already queued for an
 * integration destination of the catalog's Webhook entry (its URL is a
 * mapping field, so it reaches the loopback sink without a proxy), run by
 * the catalog's own runtime. Twice, each in a service of its own: its `send`
 * action in batches (the sink's /batch counts the calls in each body), and
 * one request per call. Timed from enabling the destination to the last
 * call's arrival; CPU per call of the service and Postgres; TCP connections
 * the sink accepted per 1,000 calls (connection reuse). Beside each, in the
 * same run, the bare loop handing the same calls straight to the catalog's
 * runtime (bench/bare-catalog.mjs).
 * @param {{ db: import("../lib/postgres.mjs").Database, sink: import("../lib/sink.mjs").Sink, count: number }} options
 */
export async function integrationBurnDownScenario({ db, sink, count }) {
  /** @type {Record<string, number>} */
  const rates = {};
  /** @type {number[]} */
  const rss = [];
  for (const variant of /** @type {const} */ (["batch", "single"])) {
    const calls = variant === "batch" ? count : Math.min(count, 50_000);
    const service = await startService(db.url, {});
    const pool = new pg.Pool({ connectionString: db.url, max: 4 });
    const { source } = await rpc(service.url, "SourceService/CreateSource", { source: { name: `integration-${variant}` } });
    const mapping =
      variant === "batch"
        ? { url: `${sink.url}/batch`, method: "POST", data: { "@path": "$." }, enable_batching: true, batch_size: 1000 }
        : { url: `${sink.url}/ok`, method: "POST", data: { "@path": "$." } };
    const { destination } = await rpc(service.url, "DestinationService/CreateDestination", {
      destination: {
        name: `integration-${variant}`,
        kind: "DESTINATION_KIND_INTEGRATION",
        sourceIds: [source.id],
        enabled: false,
        integration: {
          slug: "webhook",
          settings: {},
          subscriptions: [{ name: "Send", subscribe: 'type = "track"', action: "send", mapping }],
        },
      },
    });
    await queueDeliveries(pool, { sourceId: source.id, destinationId: destination.id, count: calls, prefix: `integration-${variant}` });
    await sink.reset();
    const meter = await startCpuMeter(pool, { service: service.pid });
    const start = performance.now();
    await setEnabled(service.url, destination.id, true);
    const arrived = await sink.waitForCount(calls, 600_000, "calls");
    const requests = await sink.count();
    const connections = await sink.connections();
    await waitForStatus(pool, destination.id, calls);
    const recorded = performance.now();
    const { used, statements } = await meter.stop();
    rss.push(service.peakRssMb());
    await service.stop();
    const bare = await bareCatalogBaseline(pool, db, sink, source.id, calls, variant === "batch" ? 1000 : 0);
    await pool.end();
    const rate = Math.round((calls / (arrived - start)) * 1000);
    const goal = variant === "batch" ? 10_000 : 3_000;
    rates[variant] = rate;
    report({
      scenario: `integration_${variant}`,
      entry: "webhook",
      action: "send",
      calls,
      calls_per_request: Math.round((calls / requests) * 10) / 10,
      calls_per_s: rate,
      rate,
      unit: "calls/s",
      target: { rate: `>= ${goal}`, met: rate >= goal },
      bare_rate: bare.per_s,
      ratio: ratioOf(rate, bare.per_s),
      baseline_bare_catalog_loop_per_s: bare.per_s,
      all_recorded_after_s: Math.round(recorded - start) / 1000,
      connections_per_1000_calls: Math.round((connections / calls) * 1000 * 100) / 100,
      cpu_us_per_call: {
        service: used.service === null ? null : Math.round((used.service * 1e6) / calls),
        postgres: used.postgres === null ? null : Math.round((used.postgres * 1e6) / calls),
      },
      server_peak_rss_mb: rss[rss.length - 1],
      postgres_statements: statements,
    });
    checkTarget(`integration (${variant === "batch" ? "batch action" : "no batch form"}) calls/s`, rate, goal);
  }
  return { rates, rss: Math.max(...rss) };
}

/**
 * @param {pg.Pool} pool
 * @param {import("../lib/postgres.mjs").Database} db
 * @param {import("../lib/sink.mjs").Sink} sink
 * @param {string} sourceId
 * @param {number} count
 * @param {number} batch
 */
async function bareCatalogBaseline(pool, db, sink, sourceId, count, batch) {
  const destinationId = randomUUID();
  await addBareDestination(pool, { id: destinationId, name: `bare-catalog-${batch}` });
  await queueDeliveries(pool, { sourceId, destinationId, count, prefix: `barecatalog${batch}-${Date.now()}` });
  await pool.query("VACUUM delivery_queue");
  await sink.reset();
  const result = await runScript("bare-catalog.mjs", [db.url, sink.url, count, batch]);
  const arrived = await sink.calls();
  if (arrived < count) throw new Error(`bare catalog loop: the sink saw ${arrived} of ${count} calls`);
  return result;
}
