import { createHmac } from "node:crypto";
import pg from "pg";
import { Pool as HttpPool } from "undici";
import { createSourceAndDestination, setEnabled } from "../lib/admin.mjs";
import { queueDeliveries } from "../lib/queue.mjs";
import { startService } from "../lib/service.mjs";
import { report } from "../lib/stats.mjs";

/**
 * Scenario 2: `count` deliveries already queued; webhooks delivered per
 * second to the sink, signed, with attempts recorded. The destination is
 * created disabled, filled, then enabled, so the clock starts with a full
 * queue. Baseline in the same run: a bare claim → POST → mark-done loop.
 */
export async function burnDownScenario({ db, sink, count, concurrency = 64 }) {
  const service = await startService(db.url, { WAYPOST_DESTINATION_CONCURRENCY: String(concurrency) });
  const pool = new pg.Pool({ connectionString: db.url, max: 4 });
  const { source, destination } = await createSourceAndDestination(service.url, `${sink.url}/ok`, { name: "burn", enabled: false });
  await queueDeliveries(pool, { sourceId: source.id, destinationId: destination.id, count, prefix: "burn" });
  await sink.reset();
  const start = performance.now();
  await setEnabled(service.url, destination.id, true);
  const arrived = await sink.waitForCount(count);
  await waitForStatus(pool, destination.id, count);
  const recorded = performance.now();
  const rss = service.peakRssMb();
  await service.stop();
  const rate = Math.round((count / (arrived - start)) * 1000);
  const bare = await bareLoopBaseline(pool, sink, count, concurrency);
  await pool.end();
  report({
    scenario: "delivery_burn_down",
    deliveries: count,
    webhooks_per_s: rate,
    all_recorded_after_s: Math.round(recorded - start) / 1000,
    concurrency,
    baseline_bare_loop_per_s: bare,
    ratio_to_bare_loop: Math.round((rate / bare) * 100) / 100,
    target_webhooks_per_s: 15_000,
    server_peak_rss_mb: rss,
  });
  return { rate, rss };
}

export async function waitForStatus(pool, destinationId, count, status = "delivered") {
  for (;;) {
    const n = (await pool.query("SELECT count(*)::int AS n FROM deliveries WHERE destination_id = $1 AND status = $2", [destinationId, status])).rows[0].n;
    if (n >= count) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The same work without Waypost's stages, typing, attempt rows or metrics: the hardware's share. */
async function bareLoopBaseline(pool, sink, count, concurrency) {
  const { rows } = await pool.query("SELECT id FROM sources LIMIT 1");
  const sourceId = rows[0].id;
  const destinationId = "00000000-0000-4000-8000-00000000b00e";
  await pool.query("INSERT INTO destinations (id, name, enabled, webhooks) VALUES ($1, 'bare', false, $2)", [
    destinationId,
    JSON.stringify([{ url: `${sink.url}/ok`, headers: {} }]),
  ]);
  await queueDeliveries(pool, { sourceId, destinationId, count, prefix: "bareloop" });
  await pool.query("UPDATE destinations SET enabled = true WHERE id = $1", [destinationId]);
  const http = new HttpPool(sink.url, { connections: concurrency });
  await sink.reset();
  const start = performance.now();
  let done = 0;
  while (done < count) {
    const { rows: jobs } = await pool.query(
      `WITH due AS (SELECT destination_id, id FROM deliveries WHERE status = 'pending' AND destination_id = $1
                     ORDER BY run_at LIMIT 500 FOR UPDATE SKIP LOCKED)
       UPDATE deliveries d SET run_at = now() + interval '1 minute' FROM due, messages m
        WHERE d.destination_id = due.destination_id AND d.id = due.id AND m.id = d.message_pk
       RETURNING d.id, m.payload`,
      [destinationId],
    );
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(concurrency, jobs.length) }, async () => {
        while (next < jobs.length) {
          const job = jobs[next++];
          const signature = createHmac("sha1", "bench-secret").update(job.payload).digest("hex");
          const response = await http.request({ path: "/ok", method: "POST", body: job.payload, headers: { "content-type": "application/json", "x-signature": signature } });
          await response.body.dump();
        }
      }),
    );
    await pool.query("UPDATE deliveries SET status = 'delivered', finalized_at = now() WHERE destination_id = $1 AND id = ANY($2::bigint[])", [
      destinationId,
      jobs.map((j) => j.id),
    ]);
    done += jobs.length;
  }
  const elapsed = performance.now() - start;
  await http.close();
  return Math.round((count / elapsed) * 1000);
}
