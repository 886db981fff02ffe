// @ts-check
import pg from "pg";
import { rpc, setEnabled } from "../lib/admin.mjs";
import { checkpoint, startCpuMeter } from "../lib/cpu.mjs";
import { trackingClient } from "../lib/load.mjs";
import { addBareDestination, queueDeliveries } from "../lib/queue.mjs";
import { startService } from "../lib/service.mjs";
import { runScript } from "../lib/script.mjs";
import { report } from "../lib/stats.mjs";
import { checkTarget, ratioOf } from "../lib/targets.mjs";
import { logBurnDown } from "./log-burn-down.mjs";

/**
 * Calls into a Postgres warehouse destination, end to end: Batch RPCs of
 * 100 track calls as fast as 8 streams go, into one `all` process at the
 * default delivery concurrency (1,024: batches of 256), whose warehouse is
 * another database on the same Postgres server; the rate is calls from the
 * first sent to the last row committed in the warehouse, beside the same
 * run's bare reference (bench/bare-warehouse.mjs: the same calls inserted,
 * claimed, loaded into tables like the service's and completed, on the
 * same databases) and the rate ingest accepted them at. First the loader
 * alone over a queued backlog (CPU per call split between the service, the
 * job table and the warehouse); then the same end to end at
 * `WAYPOST_DELIVERY_CONCURRENCY=10000` (batches of 2,500: what larger
 * batches give in rate and cost in memory), and with a new property every
 * 1,000th call (a new column, ALTER TABLE, while loading). Last, the loader
 * on the call log over a stored backlog (`warehouse-backlog`, layout
 * "log": ./log-burn-down.mjs) beside the bare cursor loader.
 * @param {{ createDatabase: () => Promise<import("../lib/postgres.mjs").Database>, count: number }} options
 */
export async function warehouseScenario({ createDatabase, count }) {
  const backlog = await loadBacklog({ createDatabase, count });
  report({ scenario: "warehouse-backlog", layout: "per_call", ...backlog });
  const steady = await run({ createDatabase, count, newProperties: false, bare: true });
  const { bare, loaded_calls_per_s: _rate, ...service } = steady;
  const rate = checkTarget("warehouse calls/s end to end", steady.loaded_calls_per_s, 20_000);
  const memory = checkTarget("warehouse peak RSS MB at the default concurrency", steady.server_peak_rss_mb, 300, { atMost: true });
  report({
    scenario: "warehouse",
    layout: "per_call",
    rate: steady.loaded_calls_per_s,
    unit: "calls/s loaded end to end",
    bare_rate: bare?.per_s ?? null,
    ratio: ratioOf(steady.loaded_calls_per_s, bare?.per_s),
    target: { rate: rate.goal, peak_rss_mb: memory.goal, met: rate.met && memory.met },
    concurrency: defaultConcurrency,
    ...service,
    bare,
  });
  const wide = await run({ createDatabase, count, newProperties: false, concurrency: 10_000 });
  report({
    scenario: "warehouse-concurrency-10000",
    layout: "per_call",
    rate: wide.loaded_calls_per_s,
    ratio_to_default_concurrency: ratioOf(wide.loaded_calls_per_s, steady.loaded_calls_per_s),
    concurrency: 10_000,
    ...without(wide, "loaded_calls_per_s"),
  });
  const evolving = await run({ createDatabase, count, newProperties: true });
  const columns = checkTarget(
    "warehouse new columns, ratio to fixed columns",
    ratioOf(evolving.loaded_calls_per_s, steady.loaded_calls_per_s),
    0.8,
  );
  report({
    scenario: "warehouse-new-columns",
    layout: "per_call",
    rate: evolving.loaded_calls_per_s,
    ratio_to_fixed_columns: ratioOf(evolving.loaded_calls_per_s, steady.loaded_calls_per_s),
    target: { ratio: columns.goal, met: columns.met },
    concurrency: defaultConcurrency,
    ...without(evolving, "loaded_calls_per_s"),
  });
  const log = await warehouseLogScenario({ createDatabase, count, perCallRate: backlog.rate, perCallEndToEnd: steady });
  return {
    rss: Math.max(steady.server_peak_rss_mb, evolving.server_peak_rss_mb, backlog.server_peak_rss_mb, log.rss),
    rssAt10000: wide.server_peak_rss_mb,
  };
}

/**
 * The warehouse on the call log: the loader over a stored backlog beside the bare cursor loader,
 * then end to end as `run` measures it (ingest and load at once), beside the per-call run's figures
 * when the same run made them (`--only=warehouse`; `--only=warehouse-log` runs this part alone).
 * @param {{ createDatabase: () => Promise<import("../lib/postgres.mjs").Database>, count: number, perCallRate?: number, perCallEndToEnd?: { loaded_calls_per_s: number, bare?: { per_s?: number } } }} options
 */
export async function warehouseLogScenario({ createDatabase, count, perCallRate, perCallEndToEnd }) {
  const backlog = await logBacklog({ createDatabase, count, perCallRate });
  const endToEnd = await run({ createDatabase, count, newProperties: false, log: true });
  const rate = checkTarget("warehouse calls/s end to end on the call log", endToEnd.loaded_calls_per_s, 20_000);
  const memory = checkTarget("warehouse peak RSS MB on the call log", endToEnd.server_peak_rss_mb, 300, { atMost: true });
  const { bare: _bare, loaded_calls_per_s: _rate, ...service } = endToEnd;
  report({
    scenario: "warehouse",
    layout: "log",
    rate: endToEnd.loaded_calls_per_s,
    unit: "calls/s loaded end to end",
    per_call_rate: perCallEndToEnd?.loaded_calls_per_s ?? null,
    ratio_to_per_call: ratioOf(endToEnd.loaded_calls_per_s, perCallEndToEnd?.loaded_calls_per_s),
    bare_per_call_rate: perCallEndToEnd?.bare?.per_s ?? null,
    target: { rate: rate.goal, peak_rss_mb: memory.goal, met: rate.met && memory.met },
    ...service,
  });
  return { rss: Math.max(backlog?.rss ?? 0, endToEnd.server_peak_rss_mb) };
}

/**
 * @param {Record<string, unknown>} object
 * @param {string} key
 */
const without = (object, key) => Object.fromEntries(Object.entries(object).filter(([k]) => k !== key));

/** The service's default WAYPOST_DELIVERY_CONCURRENCY (src/config.ts): the scenario runs at it unless told otherwise. */
const defaultConcurrency = 1_024;

/**
 * The service's environment: the default delivery concurrency, or `concurrency`;
 * a 500 ms flush (the last partial batch would otherwise wait 10 s after the load ends).
 * @param {number | undefined} concurrency
 */
const serviceEnv = (concurrency) => ({
  ...(concurrency ? { WAYPOST_DELIVERY_CONCURRENCY: String(concurrency) } : {}),
  WAYPOST_WAREHOUSE_FLUSH_MS: "500",
});

/**
 * The loader alone: `count` track calls already stored and queued for a
 * disabled warehouse destination (written in SQL, as the burn-down fills
 * its queue), then the destination enabled; calls/s from then until the
 * last row is committed in the warehouse, with the CPU per call of the
 * service and of Postgres (the job table's and the warehouse's backends
 * both: they are one server) and the costliest statements of each.
 * @param {{ createDatabase: () => Promise<import("../lib/postgres.mjs").Database>, count: number }} options
 */
async function loadBacklog({ createDatabase, count }) {
  const db = await createDatabase();
  const warehouse = await createDatabase();
  const service = await startService(db.url, serviceEnv(undefined));
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const warehousePool = new pg.Pool({ connectionString: warehouse.url, max: 2 });
  try {
    const { source } = await rpc(service.url, "SourceService/CreateSource", { source: { name: "warehouse" } });
    const { destination } = await rpc(service.url, "DestinationService/CreateDestination", {
      destination: {
        name: "warehouse",
        sourceIds: [source.id],
        enabled: false,
        kind: "DESTINATION_KIND_POSTGRES",
        postgres: { url: warehouse.url },
      },
    });
    await queueDeliveries(pool, { sourceId: source.id, destinationId: destination.id, count, prefix: "backlog" });
    const loaded = async () => {
      const result = await warehousePool
        .query("SELECT count(*)::int AS n FROM waypost.order_completed")
        .catch(() => ({ rows: [{ n: 0 }] }));
      return result.rows[0].n;
    };
    const meter = await startCpuMeter(pool, { service: service.pid });
    const warehouseMeter = await startCpuMeter(warehousePool, {});
    const start = performance.now();
    await setEnabled(service.url, destination.id, true);
    while ((await loaded()) < count) await new Promise((r) => setTimeout(r, 100));
    const committed = performance.now();
    const jobTable = await meter.stop();
    const loading = await warehouseMeter.stop();
    const perCall = (/** @type {number | null} */ seconds) => (seconds === null ? null : Math.round((seconds * 1e6) / count));
    return {
      calls: count,
      rate: Math.round((count / (committed - start)) * 1000),
      concurrency: defaultConcurrency,
      cpu_us_per_call: {
        service: perCall(jobTable.used.service),
        postgres_job_table: perCall(jobTable.used.postgres),
        postgres_warehouse: perCall(loading.used.postgres),
      },
      server_peak_rss_mb: service.peakRssMb(),
      postgres_statements: jobTable.statements,
      warehouse_statements: loading.statements,
    };
  } finally {
    await pool.end();
    await warehousePool.end();
    await service.stop();
    await warehouse.drop();
    await db.drop();
  }
}

/**
 * The loader on the call log over `count` stored calls (./log-burn-down.mjs), its warehouse another database;
 * the bare cursor loader loads the same number into tables like the service's there.
 * @param {{ createDatabase: () => Promise<import("../lib/postgres.mjs").Database>, count: number, perCallRate?: number }} options
 */
async function logBacklog({ createDatabase, count, perCallRate }) {
  const warehouse = await createDatabase();
  const pool = new pg.Pool({ connectionString: warehouse.url, max: 1 });
  const rows = async (/** @type {string} */ schema) =>
    (await pool.query(`SELECT count(*)::int AS n FROM ${schema}.order_completed`).catch(() => ({ rows: [{ n: 0 }] }))).rows[0].n;
  try {
    return await logBurnDown({
      createDatabase,
      scenario: "warehouse-backlog",
      kind: "warehouse",
      count,
      goal: 20_000,
      env: serviceEnv(undefined),
      async createDestination(url) {
        const { source } = await rpc(url, "SourceService/CreateSource", { source: { name: "warehouse-log" } });
        const { destination } = await rpc(url, "DestinationService/CreateDestination", {
          destination: {
            name: "warehouse-log",
            sourceIds: [source.id],
            enabled: false,
            kind: "DESTINATION_KIND_POSTGRES",
            postgres: { url: warehouse.url },
          },
        });
        return { source, destination };
      },
      delivered: () => rows("waypost"),
      bareDelivered: () => rows("bare"),
      reset: async () => {},
      bareTarget: warehouse.url,
      perCallRate,
    });
  } finally {
    await pool.end();
    await warehouse.drop();
  }
}

/**
 * End to end: Batch RPCs into the service until `count` calls are committed in the warehouse; with `bare`, then the bare reference on the same databases.
 * With `log`, the service puts the destination on the call log.
 * @param {{ createDatabase: () => Promise<import("../lib/postgres.mjs").Database>, count: number, newProperties: boolean, concurrency?: number, bare?: boolean, log?: boolean }} options
 */
async function run({ createDatabase, count, newProperties, concurrency, bare = false, log = false }) {
  const db = await createDatabase();
  const warehouse = await createDatabase();
  // The warehouse batch size is its own setting (1,000 by default), whatever the delivery concurrency.
  const service = await startService(db.url, { ...serviceEnv(concurrency), ...(log ? { WAYPOST_CALL_LOG: "on" } : {}) });
  let stopped = false;
  const pool = new pg.Pool({ connectionString: warehouse.url, max: 1 });
  try {
    const { source } = await rpc(service.url, "SourceService/CreateSource", { source: { name: "warehouse" } });
    await rpc(service.url, "DestinationService/CreateDestination", {
      destination: { name: "warehouse", sourceIds: [source.id], kind: "DESTINATION_KIND_POSTGRES", postgres: { url: warehouse.url } },
    });
    const client = trackingClient(service.url, source.writeKey, { propertyKeys: newProperties });
    const loaded = async () => {
      const result = await pool.query("SELECT count(*)::int AS n FROM waypost.order_completed").catch(() => ({ rows: [{ n: 0 }] }));
      return result.rows[0].n;
    };
    // Warm-up: the tables exist, the JIT has run.
    for (let i = 0; i < 20; i++) await client.sendBatch(100, "warm");
    while ((await loaded()) < 2_000) await new Promise((r) => setTimeout(r, 100));
    const start = performance.now();
    let batches = 0;
    const total = Math.ceil(count / 100);
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (batches < total) {
          const n = batches++;
          // Every 10th batch of 100 brings a property no call had before.
          await client.sendBatch(100, "wh", newProperties && n % 10 === 0 ? `p${n}` : "same");
        }
      }),
    );
    const accepted = performance.now();
    while ((await loaded()) < 2_000 + total * 100) await new Promise((r) => setTimeout(r, 100));
    const committed = performance.now();
    client.close();
    const columns = await pool.query(
      "SELECT count(*)::int AS n FROM information_schema.columns WHERE table_schema = 'waypost' AND table_name = 'order_completed'",
    );
    const calls = total * 100;
    const result = {
      calls,
      loaded_calls_per_s: Math.round((calls / (committed - start)) * 1000),
      ingest_accepted_per_s: Math.round((calls / (accepted - start)) * 1000),
      drained_after_ingest_s: Math.round(committed - accepted) / 1000,
      event_table_columns: columns.rows[0].n,
      server_peak_rss_mb: service.peakRssMb(),
    };
    if (!bare) return { ...result, bare: undefined };
    await service.stop();
    stopped = true;
    return { ...result, bare: await bareWarehouseBaseline(db, warehouse, source.id, calls) };
  } finally {
    await pool.end();
    if (!stopped) await service.stop();
    await warehouse.drop();
    await db.drop();
  }
}

/**
 * The same calls through bench/bare-warehouse.mjs on the same databases (a disabled destination row of its own; tables like the service's).
 * @param {import("../lib/postgres.mjs").Database} db
 * @param {import("../lib/postgres.mjs").Database} warehouse
 * @param {string} sourceId
 * @param {number} count
 */
async function bareWarehouseBaseline(db, warehouse, sourceId, count) {
  const pool = new pg.Pool({ connectionString: db.url, max: 1 });
  const destinationId = "00000000-0000-4000-8000-00000000b0b1";
  try {
    await addBareDestination(pool, { id: destinationId, name: "bare-warehouse" });
    await pool.query("VACUUM delivery_queue");
    await checkpoint(pool);
  } finally {
    await pool.end();
  }
  const result = await runScript("bare-warehouse.mjs", [db.url, warehouse.url, sourceId, destinationId, count]);
  const { baseline, ...rest } = result;
  return { name: baseline, ...rest };
}
