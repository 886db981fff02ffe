import type { DestinationConfigRow } from "../db/queries/destinations.js";
import { destinationOfRow, kindOf } from "../delivery/kinds/registry.js";
import { maskHeaders } from "../delivery/kinds/webhook/secret-headers.js";

export { isSecretHeader, maskedValue, maskHeaders } from "../delivery/kinds/webhook/secret-headers.js";

/** Whether the destination's attempts keep their own requests: its deliveries' body is the stored call, not what was sent. */
export function requestsInAttempts(destination: DestinationConfigRow | undefined): boolean {
  return destination !== undefined && kindOf(destination).requestsInAttempts === true;
}

export interface WebhookHeaders {
  url: string;
  headers: Record<string, string>;
}

/**
 * The headers each webhook of the destination is sent with this body, built
 * by the same code the delivery loop sends with (so signature schemes and
 * static headers are exactly as sent), from the destination's current
 * settings, then masked. Headers are not stored per attempt: after a
 * settings change these are the headers the next attempt sends. `at` is the
 * time of time-bound headers (webhook-timestamp): the latest attempt's.
 */
export function webhookHeaders(
  destination: DestinationConfigRow | undefined,
  delivery: { id: string; payload: string; message_id: string },
  now: Date,
): WebhookHeaders[] {
  if (!destination) return [];
  // Kinds that send no requests with headers (a warehouse) have none to show.
  const preview = kindOf(destination).preview;
  if (!preview) return [];
  const requests = preview(
    {
      destinationId: destination.id,
      id: delivery.id,
      leaseToken: 0,
      attemptCount: 0,
      firstAttemptAt: null,
      retryUrls: null,
      payload: delivery.payload,
      messageId: delivery.message_id,
      receivedAt: now,
      probe: false,
      destinationRevision: destination.revision,
    },
    // Shown as it would be sent, also while the destination is disabled.
    destinationOfRow(destination),
    now,
  );
  return requests.map((r) => ({ url: r.url, headers: maskHeaders(r.headers) }));
}
