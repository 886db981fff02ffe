// @ts-check
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import pg from "pg";
import { rpc } from "../lib/admin.mjs";
import { trackingClient } from "../lib/load.mjs";
import { startService } from "../lib/service.mjs";
import { report, summarize } from "../lib/stats.mjs";
import { checkTarget, ratioOf, recordFailure } from "../lib/targets.mjs";
import { runFor } from "./ingest.mjs";

const target = "ingest into 10 batching destinations on the call log, ratio to none";

/**
 * What a source's destinations cost ingest: Batch RPCs into one API process
 * with the call log on (`WAYPOST_CALL_LOG=on`), into a source with no
 * destination, one with 10 batched webhooks (on the log: ingest stores the
 * call and writes nothing per destination) and one with 10 plain webhooks
 * (per call: a queue row each), windows alternating none, batching, plain,
 * plain, batching, none so drift shows; and one whose destination is a lake
 * archive (on the log too), in the windows beside `none` (windows right after
 * the plain ones pay for their queue rows' cleanup). Nothing is delivered (an `api`
 * process). Goals: the batching source at least 0.8 of the rate with none,
 * the archive's at least 0.9.
 * Resolves with the service's peak RSS (undefined when the log is missing).
 * @param {{ db: import("../lib/postgres.mjs").Database, sink: import("../lib/sink.mjs").Sink, durationMs: number, concurrency?: number, batchSize?: number }} options
 */
export async function ingestDestinationsScenario({
  db,
  sink,
  durationMs,
  concurrency = Number(process.env.BENCH_INGEST_CONCURRENCY ?? 8),
  batchSize = 100,
}) {
  const service = await startService(db.url, { WAYPOST_ROLE: "api", WAYPOST_CALL_LOG: "on" });
  const archiveDirectory = mkdtempSync(path.join(tmpdir(), "waypost-bench-archive-"));
  const pool = new pg.Pool({ connectionString: db.url, max: 1 });
  try {
    const sources = {
      none: await sourceWith(service.url, "none", 0, () => ({})),
      batching: await sourceWith(service.url, "batching", 10, () => ({
        url: `${sink.url}/batch`,
        batch: { maxCalls: 100, maxWaitMs: 100 },
      })),
      plain: await sourceWith(service.url, "plain", 10, () => ({ url: `${sink.url}/ok` })),
      archive: await archiveSource(service.url, archiveDirectory),
    };
    const { rows } = await pool.query(
      "SELECT delivery_layout AS layout, count(*)::int AS n FROM destinations WHERE id = ANY($1::uuid[]) GROUP BY 1",
      [sources.batching.destinations],
    );
    const layouts = Object.fromEntries(rows.map((r) => [r.layout, r.n]));
    if (layouts.log !== 10) {
      const error = `the 10 batched webhooks got delivery_layout ${JSON.stringify(layouts)}, not 'log', with WAYPOST_CALL_LOG=on: this build does not put batching destinations on the call log`;
      recordFailure("ingest-destinations", "log", target, 0.8, error);
      return undefined;
    }
    const clients = {
      none: trackingClient(service.url, sources.none.writeKey),
      batching: trackingClient(service.url, sources.batching.writeKey),
      plain: trackingClient(service.url, sources.plain.writeKey),
      archive: trackingClient(service.url, sources.archive.writeKey),
    };
    for (const client of Object.values(clients)) await runFor(client, 1_000, concurrency, batchSize);
    /** @type {Record<"none" | "batching" | "plain" | "archive", number[]>} */
    const windows = { none: [], batching: [], plain: [], archive: [] };
    /** @type {Record<"none" | "batching" | "plain" | "archive", number[]>} */
    const latencies = { none: [], batching: [], plain: [], archive: [] };
    for (const step of /** @type {const} */ (["none", "archive", "batching", "plain", "plain", "batching", "archive", "none"])) {
      const run = await runFor(clients[step], durationMs / 2, concurrency, batchSize);
      windows[step].push(Math.round((run.events / run.elapsedMs) * 1000));
      latencies[step].push(...run.latencies);
    }
    for (const client of Object.values(clients)) client.close();
    const mean = (/** @type {number[]} */ xs) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length);
    const rates = {
      none: mean(windows.none),
      batching: mean(windows.batching),
      plain: mean(windows.plain),
      archive: mean(windows.archive),
    };
    const ratio = ratioOf(rates.batching, rates.none);
    const check = checkTarget(target, ratio, 0.8);
    const archiveRatio = ratioOf(rates.archive, rates.none);
    const archiveCheck = checkTarget("ingest into a source with a lake archive, ratio to none", archiveRatio, 0.9);
    report({
      scenario: "ingest-destinations",
      unit: "calls/s accepted",
      rate_no_destinations: rates.none,
      rate_10_batching_on_log: rates.batching,
      rate_10_plain_webhooks: rates.plain,
      ratio_batching_to_none: ratio,
      ratio_plain_to_none: ratioOf(rates.plain, rates.none),
      rate_lake_archive: rates.archive,
      ratio_archive_to_none: archiveRatio,
      target_ratio: 0.8,
      target_ratio_archive: 0.9,
      met: check.met && archiveCheck.met,
      layouts: { batching: "log", plain: "per_call", archive: "log" },
      windows,
      rpc_latency_ms: {
        none: summarize(latencies.none),
        batching: summarize(latencies.batching),
        plain: summarize(latencies.plain),
        archive: summarize(latencies.archive),
      },
      concurrency,
      batch_size: batchSize,
      server_peak_rss_mb: service.peakRssMb(),
    });
    return service.peakRssMb();
  } finally {
    await pool.end();
    await service.stop();
    rmSync(archiveDirectory, { recursive: true, force: true });
  }
}

/**
 * A source whose one destination is a lake archive (every call as stored, into a directory).
 * @param {string} url
 * @param {string} directory
 * @returns {Promise<{ writeKey: string, destinations: string[] }>}
 */
async function archiveSource(url, directory) {
  const { source } = await rpc(url, "SourceService/CreateSource", { source: { name: "archive" } });
  const { destination } = await rpc(url, "DestinationService/CreateDestination", {
    destination: {
      name: "archive",
      sourceIds: [source.id],
      kind: "DESTINATION_KIND_LAKE",
      lake: { url: pathToFileURL(directory).href, archive: true },
    },
  });
  return { writeKey: source.writeKey, destinations: [destination.id] };
}

/**
 * A source and `count` enabled webhook destinations of it, each with the webhook `webhook()` gives.
 * @param {string} url
 * @param {string} name
 * @param {number} count
 * @param {() => object} webhook
 * @returns {Promise<{ writeKey: string, destinations: string[] }>}
 */
async function sourceWith(url, name, count, webhook) {
  const { source } = await rpc(url, "SourceService/CreateSource", { source: { name } });
  /** @type {string[]} */
  const destinations = [];
  for (let i = 0; i < count; i++) {
    const { destination } = await rpc(url, "DestinationService/CreateDestination", {
      destination: { name: `${name}-${i}`, sourceIds: [source.id], webhooks: [webhook()], sharedSecret: "bench-secret" },
    });
    destinations.push(destination.id);
  }
  return { writeKey: source.writeKey, destinations };
}
