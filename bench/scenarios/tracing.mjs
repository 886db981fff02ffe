// @ts-check
import { randomBytes } from "node:crypto";
import { burnDownScenario } from "./burn-down.mjs";
import { ingestScenario } from "./ingest.mjs";
import { report } from "../lib/stats.mjs";

/**
 * @typedef {{ name: string, env: Record<string, string>, context: boolean, entry?: string }} Variant
 */

/**
 * What trace context costs, in one run: ingest and burn-down with tracing
 * off and no context in the calls, off with a traceparent on every call
 * (stored and forwarded), and on (every trace sampled, spans exported to
 * the sink process's OTLP endpoint), interleaved over `rounds` so that a
 * slow spell of the shared machine does not fall on one variant only.
 * With `beforeEntry` (another build's dist/server.js, e.g. the commit
 * before trace context) that build runs too, as "before".
 * @param {{ createDatabase: () => Promise<import("../lib/postgres.mjs").Database>, sink: import("../lib/sink.mjs").Sink, durationMs: number, deliveries: number, rounds?: number, beforeEntry?: string }} options
 */
export async function tracingScenario({ createDatabase, sink, durationMs, deliveries, rounds = 2, beforeEntry }) {
  const traceparent = `00-${randomBytes(16).toString("hex")}-${randomBytes(8).toString("hex")}-01`;
  /** @type {Variant[]} */
  const variants = [
    ...(beforeEntry ? [{ name: "before", env: {}, context: false, entry: beforeEntry }] : []),
    { name: "off", env: {}, context: false },
    { name: "off_forwarding", env: {}, context: true },
    { name: "on", env: { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_TRACES_SAMPLER: "always_on" }, context: true },
  ];
  /** @type {Record<string, { ingest: number[], burnDown: number[], ingestCpu: number[], burnDownCpu: number[], otlpBytes: number[] }>} */
  const results = Object.fromEntries(
    variants.map((v) => [v.name, { ingest: [], burnDown: [], ingestCpu: [], burnDownCpu: [], otlpBytes: [] }]),
  );
  for (let round = 1; round <= rounds; round++) {
    for (const v of variants) {
      const variant = { tracing: v.name, round };
      const r = results[v.name];
      if (!r) continue;
      await sink.reset();
      const ingest = await inDatabase(createDatabase, (db) =>
        ingestScenario({
          db,
          sink,
          durationMs,
          env: v.env,
          headers: v.context ? { traceparent } : {},
          variant,
          baseline: false,
          entry: v.entry,
        }),
      );
      const burn = await inDatabase(createDatabase, (db) =>
        burnDownScenario({
          db,
          sink,
          count: deliveries,
          env: v.env,
          traceparent: v.context ? traceparent : undefined,
          variant,
          baseline: false,
          entry: v.entry,
        }),
      );
      r.ingest.push(ingest.eventsPerS);
      r.burnDown.push(burn.rate);
      if (ingest.cpuUsPerCall !== null) r.ingestCpu.push(ingest.cpuUsPerCall);
      if (burn.cpuUsPerWebhook !== null) r.burnDownCpu.push(burn.cpuUsPerWebhook);
      r.otlpBytes.push((await sink.otlp()).bytes);
    }
  }
  const reference = results.off;
  if (!reference) return;
  const ratio = (/** @type {number[]} */ values, /** @type {number[]} */ base) => Math.round((median(values) / median(base)) * 1000) / 1000;
  report({
    scenario: "tracing",
    rounds,
    ...Object.fromEntries(
      Object.entries(results).map(([name, r]) => [
        name,
        {
          ingest_events_per_s: median(r.ingest),
          burn_down_webhooks_per_s: median(r.burnDown),
          ingest_cpu_us_per_call: median(r.ingestCpu),
          burn_down_cpu_us_per_webhook: median(r.burnDownCpu),
          ingest_ratio_to_off: ratio(r.ingest, reference.ingest),
          burn_down_ratio_to_off: ratio(r.burnDown, reference.burnDown),
          otlp_bytes_received_last_round: r.otlpBytes.at(-1),
        },
      ]),
    ),
    target_ratio_off: 0.97,
    target_ratio_on: 0.75,
  });
}

/**
 * @template T
 * @param {() => Promise<import("../lib/postgres.mjs").Database>} createDatabase
 * @param {(db: import("../lib/postgres.mjs").Database) => Promise<T>} fn
 */
async function inDatabase(createDatabase, fn) {
  const db = await createDatabase();
  try {
    return await fn(db);
  } finally {
    await db.drop();
  }
}

/** @param {number[]} values */
function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return 0;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : Math.round(((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2);
}
