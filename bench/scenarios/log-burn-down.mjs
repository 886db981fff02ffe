// @ts-check
import pg from "pg";
import { setEnabled } from "../lib/admin.mjs";
import { checkpoint, startCpuMeter } from "../lib/cpu.mjs";
import { addBareDestination, addBareLogCursor, storeCalls } from "../lib/queue.mjs";
import { runScript } from "../lib/script.mjs";
import { startService } from "../lib/service.mjs";
import { report } from "../lib/stats.mjs";
import { checkTarget, ratioOf, recordFailure } from "../lib/targets.mjs";

/**
 * @typedef {{
 *   scenario: string,
 *   kind: import("../bare-log-loader.mjs").LogKind,
 *   count: number,
 *   goal: number,
 *   env?: Record<string, string>,
 *   createDestination(serviceUrl: string): Promise<{ source: { id: string }, destination: { id: string } }>,
 *   delivered(): Promise<number>,
 *   bareDelivered?: () => Promise<number>,
 *   reset(): Promise<void>,
 *   bareTarget: string,
 *   processes?: Record<string, number | undefined>,
 *   perCallRate?: number,
 * }} LogRun
 *   `delivered`: what the sink, broker or warehouse holds of the run's calls (`bareDelivered`: of the bare loader's, when it loads elsewhere); `reset`: empties it before the bare loader;
 *   `bareTarget`: bench/bare-log-loader.mjs's TARGET; `processes`: more pids to meter (the broker's);
 *   `perCallRate`: the same run's rate of the kind per call, to set beside.
 */

/**
 * A batching destination on the call log: the service with
 * `WAYPOST_CALL_LOG=on`, a destination of the kind created disabled (the
 * loader holds a disabled destination's cursor), `count` calls stored in SQL
 * as ingest stores them for a destination on the log (no queue rows), then
 * the destination enabled and timed until its target holds every call and
 * log_batches records them all delivered. Then the same run's bare cursor
 * loader (bench/bare-log-loader.mjs) on the same tables and target. One
 * line, `layout: "log"`, with the rate, the bare rate and their ratio, CPU
 * µs per call and peak RSS; a run that cannot (the destination did not get
 * the log: a build without it) prints a line with `error`, and its target
 * is not met.
 * @param {{ createDatabase: () => Promise<import("../lib/postgres.mjs").Database> } & LogRun} run
 * @returns {Promise<{ rate: number, rss: number } | undefined>}
 */
export async function logBurnDown(run) {
  try {
    return await measure(run);
  } catch (error) {
    recordFailure(run.scenario, "log", `${run.scenario} calls/s on the call log`, run.goal, String(/** @type {Error} */ (error).message));
    return undefined;
  }
}

/** @param {{ createDatabase: () => Promise<import("../lib/postgres.mjs").Database> } & LogRun} run */
async function measure(run) {
  const { createDatabase, scenario, kind, count, goal, env = {}, createDestination, delivered, processes = {} } = run;
  const db = await createDatabase();
  const service = await startService(db.url, { ...env, WAYPOST_CALL_LOG: "on" });
  const pool = new pg.Pool({ connectionString: db.url, max: 4 });
  let stopped = false;
  try {
    const { source, destination } = await createDestination(service.url);
    const { rows } = await pool.query("SELECT delivery_layout FROM destinations WHERE id = $1", [destination.id]);
    const layout = rows[0]?.delivery_layout;
    if (layout !== "log") {
      throw new Error(
        `the ${kind} destination got delivery_layout '${layout}', not 'log', with WAYPOST_CALL_LOG=on: this build does not put batching destinations on the call log`,
      );
    }
    await storeCalls(pool, { sourceId: source.id, count, prefix: `log-${kind}` });
    const meter = await startCpuMeter(pool, { service: service.pid, ...processes });
    const start = performance.now();
    await setEnabled(service.url, destination.id, true);
    const { arrived, recorded } = await waitForLog(pool, destination.id, count, delivered);
    const { used, transactions, statements } = await meter.stop();
    const rss = service.peakRssMb();
    const batches = (await pool.query("SELECT count(*)::int AS n FROM log_batches WHERE destination_id = $1", [destination.id])).rows[0].n;
    await service.stop();
    stopped = true;
    const bare = await bareLogBaseline(pool, db, run);
    const rate = Math.round((count / (recorded - start)) * 1000);
    const perCall = (/** @type {number | null | undefined} */ seconds) => (seconds == null ? null : Math.round((seconds * 1e6) / count));
    const rateTarget = checkTarget(`${scenario} calls/s on the call log`, rate, goal);
    const memory = checkTarget(`${scenario} peak RSS MB on the call log`, rss, 300, { atMost: true });
    report({
      scenario,
      layout: "log",
      calls: count,
      rate,
      unit: "calls/s until recorded in log_batches",
      bare_rate: bare.per_s,
      ratio: ratioOf(rate, bare.per_s),
      per_call_rate: run.perCallRate ?? null,
      ratio_to_per_call: ratioOf(rate, run.perCallRate),
      target: { rate: rateTarget.goal, peak_rss_mb: memory.goal, met: rateTarget.met && memory.met },
      arrived_after_s: Math.round(arrived - start) / 1000,
      all_recorded_after_s: Math.round(recorded - start) / 1000,
      batches,
      calls_per_batch: Math.round((count / Math.max(1, batches)) * 10) / 10,
      cpu_us_per_call: Object.fromEntries(
        Object.entries(used)
          .filter(([name]) => name !== "load_generator")
          .map(([name, seconds]) => [name, perCall(seconds)]),
      ),
      transactions_per_1000_calls: Math.round((transactions * 1000) / count),
      server_peak_rss_mb: rss,
      postgres_statements: statements,
      bare: { name: bare.baseline, ...Object.fromEntries(Object.entries(bare).filter(([key]) => key !== "baseline")) },
    });
    return { rate, rss };
  } finally {
    await pool.end();
    if (!stopped) await service.stop();
    await db.drop();
  }
}

/**
 * Polls until the target holds `count` calls (`arrived`) and log_batches records `count` delivered (`recorded`);
 * after 10 minutes, fails with what the cursor says.
 * @param {pg.Pool} pool
 * @param {string} destinationId
 * @param {number} count
 * @param {() => Promise<number>} delivered
 */
async function waitForLog(pool, destinationId, count, delivered) {
  const deadline = Date.now() + 600_000;
  /** @type {number | undefined} */
  let arrived;
  /** @type {number | undefined} */
  let recorded;
  for (;;) {
    if (arrived === undefined && (await delivered()) >= count) arrived = performance.now();
    if (recorded === undefined) {
      const { rows } = await pool.query("SELECT coalesce(sum(delivered), 0)::int AS n FROM log_batches WHERE destination_id = $1", [
        destinationId,
      ]);
      if (rows[0].n >= count) recorded = performance.now();
    }
    if (arrived !== undefined && recorded !== undefined) return { arrived, recorded };
    if (Date.now() > deadline) {
      const cursors = await pool.query("SELECT lane, failures, last_error FROM log_cursors WHERE destination_id = $1 ORDER BY lane", [
        destinationId,
      ]);
      throw new Error(
        `not every call delivered in 10 minutes (target ${await delivered()} of ${count}); cursors: ${JSON.stringify(cursors.rows)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * The same number of calls stored in a source of the bare loader's own, behind its cursor, then bench/bare-log-loader.mjs.
 * @param {pg.Pool} pool
 * @param {import("../lib/postgres.mjs").Database} db
 * @param {LogRun} run
 */
async function bareLogBaseline(pool, db, { kind, count, bareTarget, reset, delivered, bareDelivered = delivered }) {
  await reset();
  const { rows } = await pool.query(
    "INSERT INTO sources (id, name, write_key_hash) VALUES (gen_random_uuid(), $1, decode(md5(random()::text), 'hex')) RETURNING id",
    [`bare-log-${kind}`],
  );
  const sourceId = rows[0].id;
  const destinationId = "00000000-0000-4000-8000-00000000b10c";
  await addBareDestination(pool, { id: destinationId, name: `bare-log-${kind}`, layout: "log" });
  await addBareLogCursor(pool, { destinationId, sourceId });
  await storeCalls(pool, { sourceId, count, prefix: `bare-log-${kind}` });
  await checkpoint(pool);
  const result = await runScript("bare-log-loader.mjs", [kind, db.url, sourceId, destinationId, count, bareTarget]);
  if (result.calls !== count) throw new Error(`bare log loader (${kind}): ${result.calls} of ${count} calls recorded`);
  const held = await bareDelivered();
  if (held < count) throw new Error(`bare log loader (${kind}): the target holds ${held} of ${count} calls`);
  return result;
}
