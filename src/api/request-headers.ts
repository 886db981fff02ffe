import type { DestinationConfigRow } from "../db/queries/destinations.js";
import { prepareDelivery } from "../delivery/stages.js";

/** What a masked header value reads. Plain ASCII, so it survives terminals, logs and grep. */
export const maskedValue = "[masked]";

/**
 * Header names whose values are secrets: signatures (derived from the shared
 * secret: with the body, they would let a reader test guesses of it) and
 * static headers that look like credentials.
 */
const secretName = /authorization|cookie|token|secret|key|password|passwd|signature|credential|session|auth/i;

export function isSecretHeader(name: string): boolean {
  return secretName.test(name);
}

export function maskHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  const masked: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) masked[name] = isSecretHeader(name) ? maskedValue : value;
  return masked;
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
  const preparation = prepareDelivery(
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
    { ...destination, enabled: true },
    now,
  );
  if (preparation.kind !== "send") return [];
  return preparation.requests.map((r) => ({ url: r.url, headers: maskHeaders(r.headers) }));
}
