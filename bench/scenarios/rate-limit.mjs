// @ts-check
import pg from "pg";
import { createSourceAndDestination, rpc, setEnabled } from "../lib/admin.mjs";
import { queueDeliveries } from "../lib/queue.mjs";
import { startService } from "../lib/service.mjs";
import { report } from "../lib/stats.mjs";
import { waitForStatus } from "./burn-down.mjs";

/**
 * Rate limits: an unlimited destination's burn-down of `count` alone, then
 * beside a destination limited to `limit` deliveries/s with a backlog of
 * `limitedBacklog`, in the same service (two worker processes, so the
 * shared bucket is exercised). Reports the unlimited one's rate in both
 * cases and the limited one's sends per second over time (from the attempt
 * log), with the busiest 10 s window.
 * @param {{ db: import("../lib/postgres.mjs").Database, sink: import("../lib/sink.mjs").Sink, count: number, limit?: number, limitedBacklog?: number }} options
 */
export async function rateLimitScenario({ db, sink, count, limit = 1_000, limitedBacklog = 20_000 }) {
  const first = await startService(db.url, {});
  const second = await startService(db.url, { WAYPOST_ROLE: "worker" });
  const pool = new pg.Pool({ connectionString: db.url, max: 4 });
  const alone = await burnDown(first, pool, sink, count, "unlimited-alone");

  const limited = await createSourceAndDestination(first.url, `${sink.url}/ok`, { name: "limited", enabled: false });
  await rpc(first.url, "DestinationService/UpdateDestination", {
    destination: { id: limited.destination.id, maxRequestsPerSecond: limit },
    updateMask: "maxRequestsPerSecond",
  });
  await queueDeliveries(pool, {
    sourceId: limited.source.id,
    destinationId: limited.destination.id,
    count: limitedBacklog,
    prefix: "limited",
  });
  const limitedStart = new Date();
  await setEnabled(first.url, limited.destination.id, true);
  const beside = await burnDown(first, pool, sink, count, "unlimited-beside");
  // Let the limited one run out its backlog at its rate, then read its send times.
  await waitForStatus(pool, limited.destination.id, limitedBacklog);
  const perSecond = await sendsPerSecond(pool, limited.destination.id, limitedStart);
  const rss = Math.max(first.peakRssMb(), second.peakRssMb());
  await first.stop();
  await second.stop();
  await pool.end();
  const steady = perSecond.slice(1, -1);
  report({
    scenario: "rate_limit",
    limit_per_s: limit,
    unlimited_alone_per_s: alone,
    unlimited_beside_limited_per_s: beside,
    ratio: Math.round((beside / alone) * 100) / 100,
    target_ratio: 0.9,
    limited_sends_per_s: perSecond,
    limited_mean_per_s: Math.round(steady.reduce((a, b) => a + b, 0) / Math.max(1, steady.length)),
    limited_busiest_10s: busiestWindow(perSecond, 10),
    limited_busiest_10s_target: limit * 10 * 1.1,
    worker_processes: 2,
    server_peak_rss_mb: rss,
  });
  return { alone, beside, rss };
}

/**
 * @param {import("../lib/service.mjs").Service} service
 * @param {pg.Pool} pool
 * @param {import("../lib/sink.mjs").Sink} sink
 * @param {number} count
 * @param {string} name
 */
async function burnDown(service, pool, sink, count, name) {
  const { source, destination } = await createSourceAndDestination(service.url, `${sink.url}/ok`, { name, enabled: false });
  await queueDeliveries(pool, { sourceId: source.id, destinationId: destination.id, count, prefix: name });
  const start = performance.now();
  await setEnabled(service.url, destination.id, true);
  await waitForStatus(pool, destination.id, count);
  return Math.round((count / (performance.now() - start)) * 1000);
}

/**
 * Sends (first attempts and retries) per whole second since `since`, from the attempt log.
 * @param {pg.Pool} pool
 * @param {string} destinationId
 * @param {Date} since
 * @returns {Promise<number[]>}
 */
async function sendsPerSecond(pool, destinationId, since) {
  const { rows } = await pool.query(
    `SELECT floor(extract(epoch FROM attempted_at - $2::timestamptz))::int AS s, count(*)::int AS n
       FROM delivery_attempts WHERE destination_id = $1 GROUP BY 1 ORDER BY 1`,
    [destinationId, since],
  );
  const last = rows.at(-1)?.s ?? -1;
  const series = Array.from({ length: last + 1 }, () => 0);
  for (const row of rows) if (row.s >= 0) series[row.s] = row.n;
  return series;
}

/**
 * The most sends in any `seconds` consecutive seconds.
 * @param {number[]} series
 * @param {number} seconds
 */
function busiestWindow(series, seconds) {
  let best = 0;
  for (let i = 0; i + seconds <= series.length; i++)
    best = Math.max(
      best,
      series.slice(i, i + seconds).reduce((a, b) => a + b, 0),
    );
  return best;
}
