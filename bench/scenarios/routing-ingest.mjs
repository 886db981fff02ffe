// @ts-check
import { createSourceAndDestination, rpc } from "../lib/admin.mjs";
import { trackingClient } from "../lib/load.mjs";
import { startService } from "../lib/service.mjs";
import { report, summarize } from "../lib/stats.mjs";
import { runFor } from "./ingest.mjs";
import { checkTarget } from "../lib/targets.mjs";

/** Five conditions every bench call passes: the filter's cost, with the same rows written. */
const fiveConditions = {
  type: "track",
  event: { $exists: true },
  userId: { $exists: true },
  messageId: { $startsWith: "" },
  "properties.plan": { $ne: "never" },
};

/**
 * Routing rules at ingest: Batch RPCs into an API process whose source has
 * one destination, without a filter, then with a 5-condition filter that
 * every call passes (so the same rows are written and only evaluating the
 * filter differs), then without again; windows alternate so drift shows.
 * @param {{ db: import("../lib/postgres.mjs").Database, sink: import("../lib/sink.mjs").Sink, durationMs: number, concurrency?: number, batchSize?: number }} options
 */
export async function routingIngestScenario({
  db,
  sink,
  durationMs,
  concurrency = Number(process.env.BENCH_INGEST_CONCURRENCY ?? 8),
  batchSize = 100,
}) {
  const service = await startService(db.url, { WAYPOST_ROLE: "api" });
  const { source, destination } = await createSourceAndDestination(service.url, `${sink.url}/ok`, { name: "routing" });
  const client = trackingClient(service.url, source.writeKey);
  const setFilter = (/** @type {object | null} */ filter) =>
    rpc(service.url, "DestinationService/UpdateDestination", { destination: { id: destination.id, filter }, updateMask: "filter" });
  await runFor(client, 1_000, concurrency, batchSize);
  /** @type {Record<string, number[]>} */
  const rates = { no_rules: [], five_condition_filter: [] };
  /** @type {number[]} */
  const latencies = [];
  for (const step of ["no_rules", "five_condition_filter", "no_rules", "five_condition_filter"]) {
    await setFilter(step === "no_rules" ? null : fiveConditions);
    const run = await runFor(client, durationMs / 2, concurrency, batchSize);
    rates[step]?.push(Math.round((run.events / run.elapsedMs) * 1000));
    latencies.push(...run.latencies);
  }
  client.close();
  await service.stop();
  const mean = (/** @type {number[]} */ xs) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length);
  const noRules = mean(rates.no_rules ?? []);
  const filtered = mean(rates.five_condition_filter ?? []);
  report({
    scenario: "routing-ingest",
    events_per_s_no_rules: noRules,
    events_per_s_five_condition_filter: filtered,
    windows: rates,
    ratio_filter_to_no_rules: Math.round((filtered / noRules) * 100) / 100,
    target_ratio: 0.9,
    met: checkTarget("routing ingest with a 5-condition filter, ratio to no rules", Math.round((filtered / noRules) * 100) / 100, 0.9).met,
    rpc_latency_ms: summarize(latencies),
    concurrency,
    batch_size: batchSize,
  });
}
