// @ts-check
import pg from "pg";
import { createSourceAndDestination, setEnabled } from "../lib/admin.mjs";
import { queueDeliveries } from "../lib/queue.mjs";
import { startService } from "../lib/service.mjs";
import { report } from "../lib/stats.mjs";
import { waitForStatus } from "./burn-down.mjs";
import { checkTarget } from "../lib/targets.mjs";

/**
 * Scenario 5: a destination whose endpoint never answers (every request
 * times out after 5 s) beside a healthy one. The healthy one's burn-down rate
 * is compared with its rate alone, in the same service.
 * @param {{ db: import("../lib/postgres.mjs").Database, sink: import("../lib/sink.mjs").Sink, count: number }} options
 */
export async function isolationScenario({ db, sink, count }) {
  const service = await startService(db.url, {});
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const alone = await healthyRate(service, pool, sink, count, "alone");
  const dead = await createSourceAndDestination(service.url, `${sink.url}/dead`, { name: "dead", enabled: false });
  await queueDeliveries(pool, { sourceId: dead.source.id, destinationId: dead.destination.id, count: 5_000, prefix: "dead" });
  await setEnabled(service.url, dead.destination.id, true);
  const beside = await healthyRate(service, pool, sink, count, "beside");
  await service.stop();
  await pool.end();
  report({
    scenario: "isolation",
    healthy_alone_per_s: alone,
    healthy_beside_dead_per_s: beside,
    ratio: Math.round((beside / alone) * 100) / 100,
    target_ratio: 0.9,
    met: checkTarget("healthy destination beside a dead one, ratio to alone", Math.round((beside / alone) * 100) / 100, 0.9).met,
  });
}

/**
 * A burn-down of `count` to a healthy endpoint; resolves with its rate per second.
 * @param {import("../lib/service.mjs").Service} service
 * @param {pg.Pool} pool
 * @param {import("../lib/sink.mjs").Sink} sink
 * @param {number} count
 * @param {string} name
 */
async function healthyRate(service, pool, sink, count, name) {
  const { source, destination } = await createSourceAndDestination(service.url, `${sink.url}/ok`, { name, enabled: false });
  await queueDeliveries(pool, { sourceId: source.id, destinationId: destination.id, count, prefix: name });
  await sink.reset();
  const start = performance.now();
  await setEnabled(service.url, destination.id, true);
  const end = await sink.waitForCount(count);
  await waitForStatus(pool, destination.id, count);
  return Math.round((count / (end - start)) * 1000);
}
