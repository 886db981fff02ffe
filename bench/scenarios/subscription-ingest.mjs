// @ts-check
import { rpc } from "../lib/admin.mjs";
import { trackingClient } from "../lib/load.mjs";
import { startService } from "../lib/service.mjs";
import { report, summarize } from "../lib/stats.mjs";
import { runFor } from "./ingest.mjs";
import { checkTarget } from "../lib/targets.mjs";

/**
 * Six subscriptions per destination; only the last matches the bench's calls
 * (track "Order Completed"), so routing evaluates all six for every call and
 * every destination before it finds the match: the worst case of a match.
 */
const subscribe = [
  'type = "identify"',
  'type = "page"',
  'type = "track" and event = "Signed Up"',
  'type = "group"',
  'type = "track" and properties.currency = "USD"',
  'type = "track" and event = "Order Completed"',
];

/**
 * Subscription matching at ingest: Batch RPCs into an API process, windows
 * alternating between a source with 10 webhook destinations and a source
 * with 10 integration destinations of 6 subscriptions each. Every call
 * gets a delivery at each of the 10 either way (the integrations' last
 * subscription matches), so the same rows are written and only matching
 * the subscriptions (and building the call's Segment-shaped event) differs.
 * Deliveries are created, not sent.
 * @param {{ db: import("../lib/postgres.mjs").Database, sink: import("../lib/sink.mjs").Sink, durationMs: number, concurrency?: number, batchSize?: number, destinations?: number }} options
 */
export async function subscriptionIngestScenario({
  db,
  sink,
  durationMs,
  concurrency = Number(process.env.BENCH_INGEST_CONCURRENCY ?? 8),
  batchSize = 100,
  destinations = 10,
}) {
  const service = await startService(db.url, { WAYPOST_ROLE: "api" });
  const { source: webhooks } = await rpc(service.url, "SourceService/CreateSource", { source: { name: "webhooks" } });
  const { source: integrations } = await rpc(service.url, "SourceService/CreateSource", { source: { name: "integrations" } });
  for (let i = 0; i < destinations; i++) {
    await rpc(service.url, "DestinationService/CreateDestination", {
      destination: { name: `webhook ${i}`, sourceIds: [webhooks.id], webhooks: [{ url: `${sink.url}/ok` }] },
    });
    await rpc(service.url, "DestinationService/CreateDestination", {
      destination: {
        name: `integration ${i}`,
        sourceIds: [integrations.id],
        kind: "DESTINATION_KIND_INTEGRATION",
        integration: {
          slug: "webhook",
          settings: {},
          subscriptions: subscribe.map((condition, n) => ({
            name: `subscription ${n}`,
            subscribe: condition,
            action: "send",
            mapping: { url: `${sink.url}/ok`, method: "POST" },
          })),
        },
      },
    });
  }
  const clients = {
    webhooks: trackingClient(service.url, webhooks.writeKey),
    integrations: trackingClient(service.url, integrations.writeKey),
  };
  await runFor(clients.webhooks, 1_000, concurrency, batchSize);
  await runFor(clients.integrations, 1_000, concurrency, batchSize);
  /** @type {Record<"webhooks" | "integrations", number[]>} */
  const rates = { webhooks: [], integrations: [] };
  /** @type {number[]} */
  const latencies = [];
  for (const step of /** @type {const} */ (["webhooks", "integrations", "integrations", "webhooks"])) {
    const run = await runFor(clients[step], durationMs / 2, concurrency, batchSize);
    rates[step].push(Math.round((run.events / run.elapsedMs) * 1000));
    latencies.push(...run.latencies);
  }
  clients.webhooks.close();
  clients.integrations.close();
  await service.stop();
  const mean = (/** @type {number[]} */ xs) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length);
  const plain = mean(rates.webhooks);
  const subscribed = mean(rates.integrations);
  const ratio = Math.round((subscribed / plain) * 100) / 100;
  report({
    scenario: "subscription-ingest",
    destinations,
    subscriptions_each: subscribe.length,
    events_per_s_webhooks: plain,
    events_per_s_integrations: subscribed,
    windows: rates,
    ratio_integrations_to_webhooks: ratio,
    target_ratio: 0.85,
    met: checkTarget("ingest into 10 integrations of 6 subscriptions, ratio to 10 webhooks", ratio, 0.85).met,
    rpc_latency_ms: summarize(latencies),
    concurrency,
    batch_size: batchSize,
  });
}
