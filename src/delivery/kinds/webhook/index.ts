import { DestinationKind } from "../../../../gen/waypost/v1/destination_pb.js";
import { traceRequests } from "../attempt-spans.js";
import { defineKind } from "../kind.js";
import { prepareRequests } from "./prepare.js";
import { sendAll } from "./send-all.js";
import { webhookSettings } from "./settings.js";

/**
 * Webhooks, the first kind: a delivery is a signed POST to each of the
 * destination's URLs (to those that failed retryably, on a retry), one
 * attempt per URL; it succeeds when any succeeds. The HTTP clients (one per
 * destination) belong to the runtime, which closes them.
 */
export const webhookKind = defineKind({
  name: "webhook",
  label: "webhook",
  proto: DestinationKind.WEBHOOK,
  settings: webhookSettings,
  preview: (job, destination, now) => prepareRequests(job, destination, now),
  createDelivery(context) {
    const { clock, config, guard } = context;
    return {
      async deliver(job, destination, body) {
        // Signed over the bytes sent.
        const requests = prepareRequests(job, destination, clock.now(), body);
        const attempt = traceRequests(context.tracing, job, destination, requests);
        const results = await context.http(job.destinationId, (dispatcher) =>
          sendAll(attempt.requests, { dispatcher, guard, timeoutMs: config.timeoutMs, now: () => clock.now() }),
        );
        attempt.end(results);
        return results;
      },
      label: (destination) => destination.webhook.webhooks[0]?.url ?? "",
      close: async () => {},
    };
  },
});
