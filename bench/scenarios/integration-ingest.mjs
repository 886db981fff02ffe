// @ts-check
import { createSourceAndDestination, rpc } from "../lib/admin.mjs";
import { trackingClient } from "../lib/load.mjs";
import { startService } from "../lib/service.mjs";
import { report, summarize } from "../lib/stats.mjs";
import { checkTarget } from "../lib/targets.mjs";
import { runFor } from "./ingest.mjs";

/** Six subscriptions; the bench's calls ("Order Completed" tracks) match only the last, so all six are evaluated. */
const subscriptions = (/** @type {string} */ url) =>
  ["Signed Up", "Order Refunded", "Page Viewed", "Cart Viewed", "Product Added"]
    .map((event, i) => ({ name: `S${i + 1}`, subscribe: `type = "track" and event = "${event}"`, action: "send", mapping: { url } }))
    .concat([{ name: "S6", subscribe: 'type = "track" and event = "Order Completed"', action: "send", mapping: { url } }]);

/**
 * Matching subscriptions at routing: Batch RPCs into an API process (no
 * delivery runs), alternating windows A B B A between a source with 10
 * webhook destinations and one with 10 integration destinations of 6
 * subscriptions each. Both write the same rows (a message and 10 deliveries
 * per call): what differs is matching 6 subscriptions per destination.
 * @param {{ db: import("../lib/postgres.mjs").Database, sink: import("../lib/sink.mjs").Sink, durationMs: number, concurrency?: number, batchSize?: number }} options
 */
export async function integrationIngestScenario({
  db,
  sink,
  durationMs,
  concurrency = Number(process.env.BENCH_INGEST_CONCURRENCY ?? 8),
  batchSize = 100,
}) {
  const service = await startService(db.url, { WAYPOST_ROLE: "api" });
  const { source: webhooks } = await createSourceAndDestination(service.url, `${sink.url}/ok`, { name: "webhooks-1" });
  const { source: integrations } = await rpc(service.url, "SourceService/CreateSource", { source: { name: "integrations" } });
  for (let i = 2; i <= 10; i++) {
    await rpc(service.url, "DestinationService/CreateDestination", {
      destination: { name: `webhooks-${i}`, sourceIds: [webhooks.id], webhooks: [{ url: `${sink.url}/ok` }] },
    });
  }
  for (let i = 1; i <= 10; i++) {
    await rpc(service.url, "DestinationService/CreateDestination", {
      destination: {
        name: `integration-${i}`,
        kind: "DESTINATION_KIND_INTEGRATION",
        sourceIds: [integrations.id],
        integration: { slug: "webhook", settings: {}, subscriptions: subscriptions(`${sink.url}/ok`) },
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
    if (step === "integrations") latencies.push(...run.latencies);
  }
  clients.webhooks.close();
  clients.integrations.close();
  await service.stop();
  const mean = (/** @type {number[]} */ xs) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length);
  const ratio = Math.round((mean(rates.integrations) / mean(rates.webhooks)) * 100) / 100;
  report({
    scenario: "integration-ingest",
    events_per_s_10_webhook_destinations: mean(rates.webhooks),
    events_per_s_10_integrations_6_subscriptions: mean(rates.integrations),
    windows: rates,
    ratio_integrations_to_webhooks: ratio,
    target_ratio: 0.85,
    met: checkTarget("ingest with 10 integrations of 6 subscriptions, ratio to 10 webhooks", ratio, 0.85).met,
    rpc_latency_ms: summarize(latencies),
    concurrency,
    batch_size: batchSize,
  });
}
