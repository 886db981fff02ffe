import type { Clock } from "../clock.js";
import type { AttemptResult } from "../db/job-table/index.js";
import type { WebhookRequest } from "../outbound/send.js";
import type { DestinationKind } from "./destination-kind.js";
import { prepareDelivery } from "./stages.js";

export interface WebhookKindOptions {
  clock: Clock;
  /** Sends a delivery's requests through its destination's HTTP client (the runtime's). */
  send(destinationId: string, requests: readonly WebhookRequest[]): Promise<AttemptResult[]>;
}

/**
 * Webhooks, the first kind: a delivery is a signed POST to each of the
 * destination's URLs (to those that failed retryably, on a retry), one
 * attempt per URL; it succeeds when any succeeds.
 */
export function createWebhookKind(options: WebhookKindOptions): DestinationKind {
  return {
    async deliver(job, destination, body) {
      // Signed over the bytes sent.
      const preparation = prepareDelivery(job, destination, options.clock.now(), body);
      // The loop has checked the destination exists and is enabled.
      if (preparation.kind !== "send") throw new Error(`webhook delivery not sendable: ${preparation.reason}`);
      return options.send(job.destinationId, preparation.requests);
    },
    // The HTTP clients belong to the runtime, which closes them.
    close: async () => {},
  };
}
