import pg from "pg";
import { createSourceAndDestination } from "../lib/admin.mjs";
import { trackingClient } from "../lib/load.mjs";
import { startService } from "../lib/service.mjs";
import { report, summarize } from "../lib/stats.mjs";

/**
 * Scenario 1: Batch RPCs of 100 calls from concurrent HTTP/2 clients into an
 * API process (deliveries are created, not sent). Baseline in the same run:
 * the same rows inserted by a bare script (unnest, no RPC, no validation).
 */
export async function ingestScenario({ db, sink, durationMs, concurrency = Number(process.env.BENCH_INGEST_CONCURRENCY ?? 8), batchSize = 100 }) {
  const service = await startService(db.url, { WAYPOST_ROLE: "api" });
  const { source } = await createSourceAndDestination(service.url, `${sink.url}/ok`, { name: "ingest" });
  const client = trackingClient(service.url, source.writeKey);
  await runFor(client, 1_000, concurrency, batchSize); // warm-up: JIT, connections
  const { events, latencies, elapsedMs } = await runFor(client, durationMs, concurrency, batchSize);
  client.close();
  const rss = service.peakRssMb();
  await service.stop();
  const baseline = await bareInsertBaseline(db.url, source.id, durationMs, batchSize);
  const eventsPerS = Math.round((events / elapsedMs) * 1000);
  report({
    scenario: "ingest",
    events_per_s: eventsPerS,
    rpc_latency_ms: summarize(latencies),
    concurrency,
    batch_size: batchSize,
    duration_s: elapsedMs / 1000,
    baseline_bare_insert_rows_per_s: baseline,
    ratio_to_bare_insert: Math.round((eventsPerS / baseline) * 100) / 100,
    target_events_per_s: 50_000,
    server_peak_rss_mb: rss,
  });
  return { eventsPerS, rss };
}

async function runFor(client, durationMs, concurrency, batchSize) {
  const latencies = [];
  let events = 0;
  const start = performance.now();
  const end = start + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await client.sendBatch(batchSize, "ingest");
        latencies.push(performance.now() - t);
        events += batchSize;
      }
    }),
  );
  return { events, latencies, elapsedMs: performance.now() - start };
}

/** The hardware's share: messages plus deliveries inserted in batches of 100 by a bare script. */
async function bareInsertBaseline(url, sourceId, durationMs, batchSize) {
  const pool = new pg.Pool({ connectionString: url, max: 8 });
  const destination = (await pool.query("SELECT destination_id FROM destination_sources WHERE source_id = $1", [sourceId])).rows[0].destination_id;
  let rows = 0;
  let seq = 0;
  const start = performance.now();
  const end = start + durationMs;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (performance.now() < end) {
        const ids = Array.from({ length: batchSize }, () => `bare-${++seq}`);
        await pool.query(
          `WITH m AS (
             INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
             SELECT $1, id, 'track', 'u', now(), '{"version":1,"type":"track","event":"Order Completed","messageId":"' || id || '"}'
               FROM unnest($2::text[]) AS id
             ON CONFLICT DO NOTHING RETURNING id
           )
           INSERT INTO deliveries (destination_id, message_pk, source_id, run_at, created_at)
           SELECT $3, m.id, $1, now(), now() FROM m`,
          [sourceId, ids, destination],
        );
        rows += batchSize;
      }
    }),
  );
  const elapsed = performance.now() - start;
  await pool.end();
  return Math.round((rows / elapsed) * 1000);
}
