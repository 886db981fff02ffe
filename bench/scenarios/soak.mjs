// @ts-check
import pg from "pg";
import { createSourceAndDestination } from "../lib/admin.mjs";
import { trackingClient } from "../lib/load.mjs";
import { startService } from "../lib/service.mjs";
import { report } from "../lib/stats.mjs";
import { drive } from "./end-to-end.mjs";

/**
 * A steady end-to-end load for `durationMs` (5 minutes by default), reported
 * per 30 s window with the job table's size, to show rates do not decay as
 * dead rows accumulate (no bloat).
 * @param {{ db: import("../lib/postgres.mjs").Database, sink: import("../lib/sink.mjs").Sink, durationMs: number, rate?: number, windowMs?: number }} options
 */
export async function soakScenario({ db, sink, durationMs, rate = 4_000, windowMs = 30_000 }) {
  const service = await startService(db.url, {});
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const { source, destination } = await createSourceAndDestination(service.url, `${sink.url}/ok`, { name: "soak" });
  const client = trackingClient(service.url, source.writeKey);
  await sink.reset();
  const windows = [];
  for (let elapsed = 0; elapsed < durationMs; elapsed += windowMs) {
    const before = await sink.count();
    const { sent, elapsedMs } = await drive(client, rate, windowMs, 100);
    const delivered = (await sink.count()) - before;
    const size = (
      await pool.query(
        "SELECT pg_total_relation_size('delivery_queue') AS b, (SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'delivery_queue') AS dead",
      )
    ).rows[0];
    const backlog = (await pool.query("SELECT count(*)::int AS n FROM delivery_queue WHERE destination_id = $1", [destination.id])).rows[0]
      .n;
    windows.push({
      ingest_per_s: Math.round((sent / elapsedMs) * 1000),
      delivered_per_s: Math.round((delivered / elapsedMs) * 1000),
      backlog,
      queue_table_mb: Math.round(Number(size.b) / 2 ** 20),
      dead_tuples: Number(size.dead),
    });
  }
  client.close();
  const rss = service.peakRssMb();
  await service.stop();
  await pool.end();
  const first = windows[0]?.delivered_per_s ?? 0;
  const last = windows[windows.length - 1]?.delivered_per_s ?? 0;
  report({
    scenario: "soak",
    rate_per_s: rate,
    duration_s: durationMs / 1000,
    windows,
    last_to_first_ratio: Math.round((last / first) * 100) / 100,
    server_peak_rss_mb: rss,
  });
}
