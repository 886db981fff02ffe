// @ts-check
// `npm run bench`: starts what it needs on loopback (a Postgres database, the
// service as separate processes, a keep-alive sink process) and prints one
// JSON object per line, ending with a summary of the targets met. Without
// options it runs the default set (`defaultSet` below). Options:
//   --only=a,b   these scenarios (any of `scenarioNames`; `brokers` is amqp,nats)
//   --all        every scenario but soak, history, retention, backfill and identity
//   --NAME       add scenario NAME to the default run (--soak, --tracing, …)
//   --quick   smaller counts and shorter steps (a smoke run, not a measurement)
//   --duration=MS --deliveries=N   override the ingest duration and the burn-down size
//   --history=N   finished deliveries in the history scenario (default 10,000,000; --quick 200,000)
//   --retained=N  finished deliveries in the day the retention scenario drops (default 5,000,000)
//   --backfill=N  retained calls the backfill scenario backfills (default 1,000,000; --quick 50,000)
//   --identifiers=N  identifiers stored before the identity scenario (default 10,000,000; --quick 100,000)
//   (transform-burn-down: windows of --deliveries, at most 50,000; --quick 5,000)
import os from "node:os";
import { openPostgres } from "./lib/postgres.mjs";
import { startSink } from "./lib/sink.mjs";
import { report } from "./lib/stats.mjs";
import { baselinesScenario } from "./scenarios/baselines.mjs";
import { batchedWebhooksScenario } from "./scenarios/batched-webhooks.mjs";
import { lakeScenario } from "./scenarios/lake.mjs";
import { backfillScenario } from "./scenarios/backfill.mjs";
import { brokerBurnDownScenario } from "./scenarios/broker-burn-down.mjs";
import { burnDownScenario } from "./scenarios/burn-down.mjs";
import { cheapRequestsScenario } from "./scenarios/cheap-requests.mjs";
import { clientScenario } from "./scenarios/client.mjs";
import { endToEndScenario } from "./scenarios/end-to-end.mjs";
import { historyScenario } from "./scenarios/history.mjs";
import { identityScenario } from "./scenarios/identity.mjs";
import { ingestScenario } from "./scenarios/ingest.mjs";
import { ingestDestinationsScenario } from "./scenarios/ingest-destinations.mjs";
import { integrationBurnDownScenario } from "./scenarios/integration-burn-down.mjs";
import { planIngestScenario } from "./scenarios/plan-ingest.mjs";
import { routingIngestScenario } from "./scenarios/routing-ingest.mjs";
import { subscriptionIngestScenario } from "./scenarios/subscription-ingest.mjs";
import { isolationScenario } from "./scenarios/isolation.mjs";
import { orderingScenario } from "./scenarios/ordering.mjs";
import { rateLimitScenario } from "./scenarios/rate-limit.mjs";
import { retentionScenario } from "./scenarios/retention.mjs";
import { scalingScenario } from "./scenarios/scaling.mjs";
import { citusScenario } from "./scenarios/citus.mjs";
import { idleDestinationsScenario } from "./scenarios/idle-destinations.mjs";
import { soakScenario } from "./scenarios/soak.mjs";
import { warehouseLogScenario, warehouseScenario } from "./scenarios/warehouse.mjs";
import { webhookSourcesScenario } from "./scenarios/webhook-sources.mjs";
import { tracingScenario } from "./scenarios/tracing.mjs";
import { transformBurnDownScenario } from "./scenarios/transform-burn-down.mjs";
import { selectScenarios } from "./lib/selection.mjs";
import { anyFailed, checkTarget, summaryLine } from "./lib/targets.mjs";

const args = process.argv.slice(2);
const quick = args.includes("--quick");
const selection = selectScenarios(args);
const wants = (/** @type {string} */ name) => selection.has(name);

const sizes = quick
  ? {
      durationMs: 3_000,
      burnDown: 20_000,
      stepMs: 3_000,
      rates: [2_000, 5_000, 10_000],
      latencyMs: 3_000,
      isolation: 10_000,
      warehouse: 30_000,
      soakMs: 30_000,
    }
  : {
      durationMs: 10_000,
      burnDown: 200_000,
      stepMs: 8_000,
      rates: [2_000, 4_000, 5_000, 6_000, 7_000, 8_000, 10_000, 12_000, 15_000],
      latencyMs: 10_000,
      isolation: 50_000,
      warehouse: 200_000,
      soakMs: Number(process.env.BENCH_SOAK_MS ?? 300_000),
    };

const numberArg = (/** @type {string} */ name) => {
  const arg = args.find((a) => a.startsWith(`--${name}=`));
  return arg ? Number(arg.slice(name.length + 3)) : undefined;
};
const durationArg = numberArg("duration");
const deliveriesArg = numberArg("deliveries");
const historySize = numberArg("history") ?? (quick ? 200_000 : 10_000_000);
const retainedSize = numberArg("retained") ?? (quick ? 200_000 : 5_000_000);
const backfillSize = numberArg("backfill") ?? (quick ? 50_000 : 1_000_000);
const identifiersStored = numberArg("identifiers") ?? (quick ? 100_000 : 10_000_000);
// Each of the four windows of transform-burn-down (and a warm-up of each kind): at most 50,000.
const transformWindow = deliveriesArg ? Math.min(deliveriesArg, 50_000) : quick ? 5_000 : Math.min(sizes.burnDown, 50_000);
if (durationArg) sizes.durationMs = durationArg;
if (deliveriesArg) sizes.burnDown = deliveriesArg;

const postgres = await openPostgres();
const sink = await startSink();
/**
 * Runs a scenario on a database of its own.
 * @template T
 * @param {(db: import("./lib/postgres.mjs").Database) => Promise<T>} fn
 * @returns {Promise<T>}
 */
async function inFreshDatabase(fn) {
  const db = await postgres.createDatabase();
  try {
    return await fn(db);
  } finally {
    await db.drop();
  }
}
report({
  scenario: "environment",
  cpus: os.cpus().length,
  cpu_model: os.cpus()[0]?.model,
  memory_gb: Math.round(os.totalmem() / 2 ** 30),
  node: process.version,
  postgres: postgres.postgresVersion,
  postgres_embedded: postgres.embedded,
  quick,
});
/** @type {Record<string, number | undefined>} */
const rss = {};
/** @type {string[]} */
const failures = [];
/** @type {number | undefined} the warehouse's peak at WAYPOST_DELIVERY_CONCURRENCY=10000, beside the target's */
let warehouseAt10000;

/** @type {number | undefined} */
let burnDownRate;
try {
  if (wants("ingest")) rss.ingest = (await inFreshDatabase((db) => ingestScenario({ db, sink, durationMs: sizes.durationMs }))).rss;
  // A 50-event tracking plan in block mode beside no plan, same service.
  // No destination, 10 batched webhooks on the call log, 10 plain webhooks: windows alternating in one API process.
  if (wants("ingest-destinations")) {
    rss.ingest_destinations = await inFreshDatabase((db) => ingestDestinationsScenario({ db, sink, durationMs: sizes.durationMs }));
  }
  if (wants("plan-ingest")) await inFreshDatabase((db) => planIngestScenario({ db, sink, durationMs: sizes.durationMs }));
  if (wants("routing-ingest")) await inFreshDatabase((db) => routingIngestScenario({ db, sink, durationMs: sizes.durationMs }));
  // 10 integration destinations of 6 subscriptions each beside 10 webhook destinations, windows A B B A in one service.
  if (wants("subscription-ingest")) await inFreshDatabase((db) => subscriptionIngestScenario({ db, sink, durationMs: sizes.durationMs }));
  if (wants("burn-down") || wants("baselines")) {
    const result = await inFreshDatabase((db) => burnDownScenario({ db, sink, count: sizes.burnDown }));
    burnDownRate = result.rate;
    rss.burn_down = result.rss;
  }
  // A small transform's burn-down beside the same without rules, windows A B B A in one service.
  if (wants("transform-burn-down")) {
    rss.transform_burn_down = (await inFreshDatabase((db) => transformBurnDownScenario({ db, sink, count: transformWindow }))).rss;
  }
  const createDatabase = () => postgres.createDatabase();
  // Each broker kind's burn-down beside the bare publish loop on the same broker (at most 50,000 each), then on the call log.
  for (const kind of /** @type {const} */ (["amqp", "nats"])) {
    if (wants(kind)) {
      rss[kind] = (await inFreshDatabase((db) => brokerBurnDownScenario({ db, createDatabase, count: transformWindow, kind }))).rss;
    }
  }
  // 100 calls per POST, beside a bare loop posting batches of 100; then on the call log, beside the bare cursor loader.
  if (wants("batched-webhooks")) {
    const result = await inFreshDatabase((db) => batchedWebhooksScenario({ db, createDatabase, sink, count: sizes.burnDown }));
    checkTarget("batched webhooks calls/s at 100 calls per POST", result.rate, 40_000);
    rss.batched_webhooks = result.rss;
  }
  // The catalog's Webhook entry run by its own runtime: its batch action, then one request per call.
  if (wants("integrations")) {
    rss.integrations = (
      await inFreshDatabase((db) => integrationBurnDownScenario({ db, sink, count: Math.min(sizes.burnDown, 100_000) }))
    ).rss;
  }
  // Stripe-signed requests into a webhook source (api), then its backlog processed (worker), beside a bare verify-and-insert server.
  if (wants("webhook-sources")) await inFreshDatabase((db) => webhookSourcesScenario({ db, durationMs: sizes.durationMs }));
  if (wants("scaling")) {
    const results = await scalingScenario({
      createDatabase: () => postgres.createDatabase(),
      sink,
      deliveries: Math.min(sizes.burnDown, 50_000),
      durationMs: sizes.durationMs,
    });
    rss.scaling = Math.max(...results.map((r) => r.server_peak_rss_mb));
  }
  // DATABASE_URL at a Citus coordinator: one Postgres beside coordinator + workers, same run (docs/scaling.md).
  if (wants("citus")) {
    if (postgres.embedded || !process.env.DATABASE_URL) throw new Error("--only=citus needs DATABASE_URL at a Citus coordinator");
    await citusScenario({ coordinatorUrl: process.env.DATABASE_URL, sink, durationMs: sizes.durationMs });
  }
  // A busy destination's burn-down beside 0 and 200 idle ones: one Postgres, and Citus when DATABASE_URL is a coordinator.
  if (wants("idle-destinations")) {
    await idleDestinationsScenario({
      serverUrl: process.env.DATABASE_URL ?? "",
      createDatabase: () => postgres.createDatabase(),
      sink,
      deliveries: Math.min(sizes.burnDown, 20_000),
    });
  }
  if (wants("end-to-end")) {
    const { stepMs, rates, latencyMs } = sizes;
    rss.end_to_end = (await inFreshDatabase((db) => endToEndScenario({ db, sink, stepMs, rates, latencyMs }))).rss;
  }
  if (wants("baselines")) {
    await inFreshDatabase((db) => baselinesScenario({ db, sink, count: sizes.burnDown, concurrency: 64, waypostRate: burnDownRate }));
  }
  if (wants("isolation")) await inFreshDatabase((db) => isolationScenario({ db, sink, count: sizes.isolation }));
  if (wants("client")) await inFreshDatabase((db) => clientScenario({ db, sink, quick }));
  // What a refused or mostly invalid request costs the API process (moved here from a unit test's CPU bound).
  if (wants("cheap-requests")) await inFreshDatabase((db) => cheapRequestsScenario({ db, sink, quick }));
  // Flow control: per-user ordering on vs off; a rate-limited destination beside an unlimited one.
  if (wants("ordering"))
    await inFreshDatabase((db) => orderingScenario({ db, sink, count: sizes.burnDown, users: quick ? 1_000 : 10_000 }));
  if (wants("rate-limit")) {
    await inFreshDatabase((db) => rateLimitScenario({ db, sink, count: sizes.isolation, limitedBacklog: quick ? 8_000 : 30_000 }));
  }
  if (wants("warehouse")) {
    const result = await warehouseScenario({ createDatabase: () => postgres.createDatabase(), count: sizes.warehouse });
    rss.warehouse = result.rss;
    warehouseAt10000 = result.rssAt10000;
  } else if (wants("warehouse-log")) {
    rss.warehouse = (await warehouseLogScenario({ createDatabase: () => postgres.createDatabase(), count: sizes.warehouse })).rss;
  }
  // A lake on the call log into a loopback S3-compatible server, beside the bare script writing the same files.
  if (wants("lake")) rss.lake = (await inFreshDatabase((db) => lakeScenario({ db, count: sizes.burnDown }))).rss;
  // Trace context off (with and without a context in the calls) and on, ingest and burn-down, interleaved.
  if (wants("tracing")) {
    await tracingScenario({
      createDatabase: () => postgres.createDatabase(),
      sink,
      durationMs: sizes.durationMs,
      deliveries: Math.min(sizes.burnDown, 50_000),
      rounds: quick ? 1 : 2,
      beforeEntry: process.env.BENCH_BEFORE_ENTRY,
    });
  }
  const peaks = Object.values(rss).filter((mb) => mb !== undefined);
  if (peaks.length > 0) {
    // The warehouse at 10,000 in flight is not held to it: the target is at the default concurrency.
    report({
      scenario: "memory",
      peak_rss_mb: rss,
      max_peak_rss_mb: Math.max(...peaks),
      target_mb: 300,
      warehouse_at_concurrency_10000_mb: warehouseAt10000,
    });
    checkTarget("peak service RSS MB, every scenario at the default concurrency", Math.max(...peaks), 300, { atMost: true });
  }
  if (wants("history")) {
    await inFreshDatabase((db) => historyScenario({ db, sink, count: Math.min(sizes.burnDown, 50_000), history: historySize }));
  }
  if (wants("retention")) await inFreshDatabase((db) => retentionScenario({ db, count: retainedSize }));
  // BackfillDestination over retained calls, with tracking RPCs' latency beside it and delivery running.
  if (wants("backfill")) await inFreshDatabase((db) => backfillScenario({ db, sink, count: backfillSize }));
  // Ingest with identity resolution off and on, on a stored graph of --identifiers (built once per server, then copied).
  if (wants("identity")) {
    await identityScenario({ serverUrl: postgres.serverUrl, identifiers: identifiersStored, durationMs: sizes.durationMs });
  }
  if (wants("soak")) await inFreshDatabase((db) => soakScenario({ db, sink, durationMs: sizes.soakMs }));
  report(summaryLine());
} finally {
  await sink.close();
  await postgres.close();
}
process.exit(failures.length > 0 || anyFailed() ? 1 : 0);
