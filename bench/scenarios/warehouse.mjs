// @ts-check
import pg from "pg";
import { rpc, setEnabled } from "../lib/admin.mjs";
import { startCpuMeter } from "../lib/cpu.mjs";
import { trackingClient } from "../lib/load.mjs";
import { queueDeliveries } from "../lib/queue.mjs";
import { startService } from "../lib/service.mjs";
import { report } from "../lib/stats.mjs";

/**
 * Calls into a Postgres warehouse destination, end to end: Batch RPCs of
 * 100 track calls as fast as 8 streams go, into one `all` process whose
 * warehouse is another database on the same Postgres server; the rate is
 * calls from the first sent to the last row committed in the warehouse,
 * beside the rate ingest accepted them at in the same run. Run twice: with a
 * fixed set of properties, and with a new property every 1,000th call (a
 * new column, ALTER TABLE, while loading).
 * @param {{ createDatabase: () => Promise<import("../lib/postgres.mjs").Database>, count: number }} options
 */
export async function warehouseScenario({ createDatabase, count }) {
  const backlog = await loadBacklog({ createDatabase, count });
  report({ scenario: "warehouse-backlog", ...backlog, target_loaded_per_s: 20_000 });
  const steady = await run({ createDatabase, count, newProperties: false });
  const evolving = await run({ createDatabase, count, newProperties: true });
  report({ scenario: "warehouse", ...steady, target_loaded_per_s: 20_000 });
  report({
    scenario: "warehouse-new-columns",
    ...evolving,
    ratio_to_fixed_columns: Math.round((evolving.loaded_calls_per_s / steady.loaded_calls_per_s) * 100) / 100,
    target_ratio: 0.8,
  });
  return { rss: Math.max(steady.server_peak_rss_mb, evolving.server_peak_rss_mb, backlog.server_peak_rss_mb) };
}

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
  const service = await startService(db.url, { WAYPOST_WAREHOUSE_FLUSH_MS: "500" });
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
      loaded_calls_per_s: Math.round((count / (committed - start)) * 1000),
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
 * @param {{ createDatabase: () => Promise<import("../lib/postgres.mjs").Database>, count: number, newProperties: boolean }} options
 */
async function run({ createDatabase, count, newProperties }) {
  const db = await createDatabase();
  const warehouse = await createDatabase();
  // The default delivery concurrency (1,024) and warehouse batch size (1,000).
  const service = await startService(db.url, {
    // The last partial batch would otherwise wait 10 s after the load ends.
    WAYPOST_WAREHOUSE_FLUSH_MS: "500",
  });
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
    return {
      calls,
      ingest_accepted_per_s: Math.round((calls / (accepted - start)) * 1000),
      loaded_calls_per_s: Math.round((calls / (committed - start)) * 1000),
      drained_after_ingest_s: Math.round(committed - accepted) / 1000,
      event_table_columns: columns.rows[0].n,
      server_peak_rss_mb: service.peakRssMb(),
    };
  } finally {
    await pool.end();
    await service.stop();
    await warehouse.drop();
    await db.drop();
  }
}
