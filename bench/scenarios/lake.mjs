// @ts-check
/// <reference path="../../test/helpers/s3rver.d.ts" />
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import S3rver from "s3rver";
import { rpc, setEnabled } from "../lib/admin.mjs";
import { startCpuMeter } from "../lib/cpu.mjs";
import { storeCalls } from "../lib/queue.mjs";
import { startService } from "../lib/service.mjs";
import { report } from "../lib/stats.mjs";
import { checkTarget, ratioOf } from "../lib/targets.mjs";
import { lakeBare } from "../lake-bare.mjs";

/**
 * A lake on the call log draining into a loopback S3-compatible server
 * (s3rver, in this process): `count` of the bench's track calls stored in
 * SQL while the lake destination is disabled, then the destination enabled
 * and timed until log_batches records every call delivered (each recorded
 * only once its objects are stored). Beside it, in the same run, the bare
 * script writing the same Parquet files (bench/lake-bare.mjs: the same
 * tables and columns, as many calls per file as the lake's files held, two
 * in flight) to the same kind of server. Targets: at least 40,000 calls/s,
 * and at least 0.7 of the bare script.
 * @param {{ db: import("../lib/postgres.mjs").Database, count: number }} options
 */
export async function lakeScenario({ db, count }) {
  const work = mkdtempSync(path.join(tmpdir(), "waypost-bench-lake-"));
  const s3 = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: work, configureBuckets: [{ name: "lake" }] });
  const { port } = await s3.run();
  const service = await startService(db.url, { WAYPOST_CALL_LOG: "on" });
  const pool = new pg.Pool({ connectionString: db.url, max: 4 });
  try {
    const { source } = await rpc(service.url, "SourceService/CreateSource", { source: { name: "lake" } });
    const { destination } = await rpc(service.url, "DestinationService/CreateDestination", {
      destination: {
        name: "lake",
        sourceIds: [source.id],
        enabled: false,
        kind: "DESTINATION_KIND_LAKE",
        lake: {
          url: "s3://lake/bench",
          endpoint: `http://127.0.0.1:${port}`,
          accessKeyId: "S3RVER",
          secretAccessKey: "S3RVER",
          flushSeconds: 1,
        },
      },
    });
    await storeCalls(pool, { sourceId: source.id, count, prefix: "lake" });
    const meter = await startCpuMeter(pool, { service: service.pid });
    const start = performance.now();
    await setEnabled(service.url, destination.id, true);
    await waitForDelivered(pool, destination.id, count);
    const elapsed = performance.now() - start;
    const { used } = await meter.stop();
    const rss = service.peakRssMb();
    const { rows } = await pool.query("SELECT count(*)::int AS n FROM log_batches WHERE destination_id = $1", [destination.id]);
    const batches = rows[0].n;
    await service.stop();
    const rate = Math.round((count / elapsed) * 1000);
    const callsPerFile = Math.max(1, Math.round(count / Math.max(1, batches)));
    const bare = await lakeBare({ count, batch: callsPerFile, lanes: 2 });
    const rateTarget = checkTarget("lake calls/s into a loopback S3-compatible server", rate, 40_000);
    const ratio = ratioOf(rate, bare.per_s);
    const ratioTarget = checkTarget("lake calls/s against the bare script writing the same files", ratio ?? 0, 0.7);
    const memory = checkTarget("lake peak RSS MB", rss, 300, { atMost: true });
    report({
      scenario: "lake",
      layout: "log",
      calls: count,
      rate,
      unit: "calls/s until recorded in log_batches (their objects stored)",
      bare_rate: bare.per_s,
      ratio,
      target: {
        rate: rateTarget.goal,
        ratio: ratioTarget.goal,
        peak_rss_mb: memory.goal,
        met: rateTarget.met && ratioTarget.met && memory.met,
      },
      batches,
      calls_per_file: callsPerFile,
      cpu_us_per_call: Object.fromEntries(
        Object.entries(used)
          .filter(([name]) => name !== "load_generator")
          .map(([name, seconds]) => [name, seconds == null ? null : Math.round((seconds * 1e6) / count)]),
      ),
      server_peak_rss_mb: rss,
      bare: { name: "lake-bare.mjs", ...bare },
    });
    return { rate, rss };
  } finally {
    await pool.end();
    await service.stop().catch(() => {});
    await s3.close();
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * Polls until log_batches records `count` calls delivered; after 10 minutes, fails with what the cursor says.
 * @param {pg.Pool} pool
 * @param {string} destinationId
 * @param {number} count
 */
async function waitForDelivered(pool, destinationId, count) {
  const deadline = Date.now() + 600_000;
  for (;;) {
    const { rows } = await pool.query("SELECT coalesce(sum(delivered), 0)::int AS n FROM log_batches WHERE destination_id = $1", [
      destinationId,
    ]);
    if (rows[0].n >= count) return;
    if (Date.now() > deadline) {
      const cursors = await pool.query("SELECT lane, failures, last_error FROM log_cursors WHERE destination_id = $1", [destinationId]);
      throw new Error(`lake: ${rows[0].n} of ${count} calls recorded in 10 minutes; cursors: ${JSON.stringify(cursors.rows)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
