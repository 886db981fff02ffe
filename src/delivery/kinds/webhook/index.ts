import { DestinationKind } from "../../../../gen/waypost/v1/destination_pb.js";
import type { ClaimedDelivery } from "../../../db/job-table/index.js";
import { sendWebhook } from "../../../outbound/send.js";
import { traceRequests } from "../attempt-spans.js";
import { defineKind } from "../kind.js";
import { batchHeaders, createWebhookBatcher, isBatched } from "./batcher.js";
import { chosenWebhooks, prepareRequests, type WebhookDestination } from "./prepare.js";
import { sendAll } from "./send-all.js";
import { type StoredWebhook, webhookSettings } from "./settings.js";

/** Batches of a destination in flight or filling at once: the job table work of their calls (claims, completions) goes in larger rounds. */
const batchesInFlight = 8;

/**
 * Webhooks, the first kind: a delivery is a signed POST to each of the
 * destination's URLs (to those that failed retryably, on a retry), one
 * attempt per URL; it succeeds when any succeeds. A URL with batch settings
 * gets the call inside a batch POST instead (batcher.ts). The HTTP clients
 * (one per destination) belong to the runtime, which closes them.
 */
export const webhookKind = defineKind({
  name: "webhook",
  label: "webhook",
  proto: DestinationKind.WEBHOOK,
  settings: webhookSettings,
  // A batched URL's requests carry the batch's headers (its own webhook-id, no trace context).
  preview: (job, destination, now) =>
    prepareRequests(job, destination, now).map((request) => {
      const webhook = destination.webhook.webhooks[request.urlIndex];
      if (!webhook || !isBatched(webhook)) return request;
      return {
        url: request.url,
        headers: batchHeaders(destination.webhook, webhook, "(derived from each batch POST's calls)", now, `{"batch":[${job.payload}]}`),
      };
    }),
  createDelivery(context) {
    const { clock, config, guard } = context;
    const sendContext = { guard, timeoutMs: config.timeoutMs, now: () => clock.now() };
    const batcher = createWebhookBatcher({
      clock,
      send: (destinationId, request) => context.http(destinationId, (dispatcher) => sendWebhook(request, { ...sendContext, dispatcher })),
    });
    /** A POST of this call alone to each of `webhooks`, signed over the bytes sent. */
    async function sendSingly(job: ClaimedDelivery, destination: WebhookDestination, body: string, webhooks: readonly StoredWebhook[]) {
      const requests = prepareRequests(job, destination, clock.now(), body, webhooks);
      const attempt = traceRequests(context.tracing, job, destination, requests);
      const results = await context.http(job.destinationId, (dispatcher) => sendAll(attempt.requests, { ...sendContext, dispatcher }));
      attempt.end(results);
      return results;
    }
    return {
      async deliver(job, destination, body) {
        const chosen = chosenWebhooks(job, destination.webhook);
        if (!chosen.some(isBatched)) return sendSingly(job, destination, body, chosen);
        const waiting = chosen
          .filter(isBatched)
          .map((webhook) => batcher.add(job.destinationId, destination.webhook, webhook, { deliveryId: job.id, body }));
        const single = chosen.filter((webhook) => !isBatched(webhook));
        const results = single.length > 0 ? await sendSingly(job, destination, body, single) : [];
        return [...results, ...(await Promise.all(waiting)).flat()].sort((a, b) => a.urlIndex - b.urlIndex);
      },
      label: (destination) => destination.webhook.webhooks[0]?.url ?? "",
      inFlightLimit(destination) {
        const most = Math.max(0, ...destination.webhook.webhooks.map((w) => w.batch?.maxCalls ?? 0));
        return most === 0 ? undefined : Math.max(config.perDestinationConcurrency, most * batchesInFlight);
      },
      batchWindow(destination) {
        const batches = destination.webhook.webhooks.flatMap((w) => (w.batch ? [w.batch] : []));
        if (batches.length === 0) return undefined;
        return { calls: Math.min(...batches.map((b) => b.maxCalls)), waitMs: Math.min(...batches.map((b) => b.maxWaitMs)) };
      },
      tick: () => batcher.tick(),
      flush: () => batcher.flush(),
      close: () => batcher.close(),
    };
  },
});
