// @ts-check
import pg from "pg";
import { rpc } from "../lib/admin.mjs";
import { trackingClient } from "../lib/load.mjs";
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
  const steady = await run({ createDatabase, count, newProperties: false });
  const evolving = await run({ createDatabase, count, newProperties: true });
  report({ scenario: "warehouse", ...steady, target_loaded_per_s: 20_000 });
  report({
    scenario: "warehouse-new-columns",
    ...evolving,
    ratio_to_fixed_columns: Math.round((evolving.loaded_calls_per_s / steady.loaded_calls_per_s) * 100) / 100,
    target_ratio: 0.8,
  });
  return { rss: Math.max(steady.server_peak_rss_mb, evolving.server_peak_rss_mb) };
}

/**
 * @param {{ createDatabase: () => Promise<import("../lib/postgres.mjs").Database>, count: number, newProperties: boolean }} options
 */
async function run({ createDatabase, count, newProperties }) {
  const db = await createDatabase();
  const warehouse = await createDatabase();
  const service = await startService(db.url, {
    // A warehouse destination holds half of these in flight: batches of 2,500.
    WAYPOST_DELIVERY_CONCURRENCY: "10000",
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
