/**
 * The call an integration's actions see: the Segment spec's shape of a
 * stored call (what the catalog's subscriptions and mapping directives are
 * written against), made from the body the destination's rules shaped (the
 * webhook body of docs/webhooks.md, after field drops and the transform).
 * The two shapes differ in a few keys only: the webhook body's `version` is
 * not part of the spec, an alias names its ids "Previous ID" and "User ID",
 * and the receive and send times are the delivery's, not the body's.
 */
export interface SegmentEvent {
  type: string;
  messageId?: string;
  timestamp?: string;
  receivedAt: string;
  sentAt?: string;
  userId?: string;
  anonymousId?: string;
  event?: string;
  name?: string;
  category?: string;
  groupId?: string;
  previousId?: string;
  properties?: Record<string, unknown>;
  traits?: Record<string, unknown>;
  context?: Record<string, unknown>;
  integrations?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface SegmentEventTimes {
  /** When Waypost received the call. */
  receivedAt: Date;
  /** When the client says it sent it; null or absent when it did not say. */
  sentAt?: Date | null | undefined;
}

/** Webhook-body keys that are not the spec's, and the spec's names for them. */
const renamed: Readonly<Record<string, string | null>> = {
  version: null,
  "Previous ID": "previousId",
  "User ID": "userId",
};

/**
 * The Segment-shaped event of a rules-shaped body. Keys a transform added
 * are kept (a mapping may read them); `receivedAt` and `sentAt` always come
 * from the delivery, whatever the body says.
 */
export function segmentEventOf(body: Record<string, unknown>, times: SegmentEventTimes): SegmentEvent {
  const event: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    if (!(key in renamed)) {
      event[key] = value;
      continue;
    }
    const name = renamed[key];
    if (name) event[name] = value;
  }
  event.receivedAt = times.receivedAt.toISOString();
  if (times.sentAt) event.sentAt = times.sentAt.toISOString();
  else delete event.sentAt;
  return event as SegmentEvent;
}
