import type { Clock } from "../clock.js";
import type { AttemptResult } from "../db/job-table/index.js";
import type { WebhookRequest } from "../outbound/send.js";
import { tracingOff, type Tracing } from "../tracing/tracing.js";
import { traceAttempt } from "./attempt-spans.js";
import type { DestinationKind } from "./destination-kind.js";
import { prepareDelivery } from "./stages.js";

export interface WebhookKindOptions {
  clock: Clock;
  /** Sends a delivery's requests through its destination's HTTP client (the runtime's). */
  send(destinationId: string, requests: readonly WebhookRequest[]): Promise<AttemptResult[]>;
  /** A client span per request when tracing is on (attempt-spans.ts). */
  tracing?: Tracing | undefined;
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
      const attempt = traceAttempt(options.tracing ?? tracingOff, job, destination, preparation.requests);
      const results = await options.send(job.destinationId, attempt.requests);
      attempt.end(results);
      return results;
    },
    // The HTTP clients belong to the runtime, which closes them.
    close: async () => {},
  };
}
