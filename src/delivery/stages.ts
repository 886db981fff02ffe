import type { RetrySchedule } from "../config.js";
import type { ClaimedDelivery, DeliveryCompletion } from "../db/job-table/index.js";
import type { DestinationConfigRow } from "../db/queries/destinations.js";
import { nextRetryAt } from "./retry-policy.js";
import { sendWebhook, type AttemptResult, type SendContext, type WebhookRequest } from "./send.js";
import { signPayload } from "./sign.js";

export const userAgent = "Waypost/1.0";

/** What to do with a claimed delivery, decided from the destination's current settings. */
export type Preparation =
  | { kind: "send"; requests: WebhookRequest[] }
  | { kind: "cancel"; reason: string }
  | { kind: "release"; reason: string };

type Webhook = DestinationConfigRow["webhooks"][number];

/** What every request to one webhook shares: parsed once per claimed batch. */
interface WebhookTarget {
  url: URL;
  headers: Record<string, string>;
}

// Keyed by the webhook objects of one claim's destination rows, which are
// read fresh for every claim: settings changes are seen, and entries go
// with their rows.
const targets = new WeakMap<Webhook, WebhookTarget>();

function targetOf(webhook: Webhook): WebhookTarget {
  let target = targets.get(webhook);
  if (!target) {
    target = {
      url: new URL(webhook.url),
      headers: { ...webhook.headers, "user-agent": userAgent, "content-type": "application/json" },
    };
    targets.set(webhook, target);
  }
  return target;
}

/**
 * Stage 1, prepare: the requests to send. The body is the stored payload,
 * byte for byte; the signature is computed over exactly those bytes.
 */
export function prepareDelivery(job: ClaimedDelivery, destination: DestinationConfigRow | undefined): Preparation {
  if (!destination) return { kind: "cancel", reason: "destination deleted" };
  if (!destination.enabled) return { kind: "release", reason: "destination disabled" };
  const signature = destination.shared_secret ? signPayload(destination.shared_secret, job.payload) : undefined;
  // A retry goes only to the URLs that failed retryably. If the settings
  // changed so that none of them is configured any more, every URL is tried.
  const retrying = job.retryUrls ? destination.webhooks.filter((w) => job.retryUrls!.includes(w.url)) : [];
  const chosen = retrying.length > 0 ? retrying : destination.webhooks;
  const requests = chosen.map((webhook) => {
    const target = targetOf(webhook);
    return {
      urlIndex: destination.webhooks.indexOf(webhook),
      url: webhook.url,
      target: target.url,
      body: job.payload,
      headers: signature ? { ...target.headers, "x-signature": signature } : target.headers,
    };
  });
  return { kind: "send", requests };
}

/**
 * Stage 2, send: every URL concurrently. The first success ends the
 * delivery; requests still running are aborted and logged as abandoned.
 */
export async function sendAll(requests: readonly WebhookRequest[], ctx: Omit<SendContext, "signal">): Promise<AttemptResult[]> {
  if (requests.length === 1) return [await sendWebhook(requests[0]!, ctx)];
  const succeeded = new AbortController();
  return Promise.all(
    requests.map(async (request) => {
      const result = await sendWebhook(request, { ...ctx, signal: succeeded.signal });
      if (result.outcome === "success") succeeded.abort();
      return result;
    }),
  );
}

/** Stage 3, record: the delivery's next state from its attempts. */
export function decideCompletion(
  job: ClaimedDelivery,
  results: readonly AttemptResult[],
  now: Date,
  schedule: RetrySchedule,
  random?: () => number,
): DeliveryCompletion {
  const completion = {
    destinationId: job.destinationId,
    id: job.id,
    leaseToken: job.leaseToken,
    attempted: true,
    attemptedAt: results[0]?.attemptedAt ?? now,
    attempts: [...results],
    runAt: now,
    retryUrls: null,
  };
  if (results.some((r) => r.outcome === "success")) return { ...completion, status: "delivered" };
  const retryable = results.filter((r) => r.outcome === "retryable");
  if (retryable.length === 0) return { ...completion, status: "failed" };
  const hints = retryable.map((r) => r.retryAfterMs).filter((ms): ms is number => ms !== undefined);
  const next = nextRetryAt(
    {
      attempts: job.attemptCount + 1,
      firstAttemptAt: job.firstAttemptAt ?? completion.attemptedAt,
      now,
      retryAfterMs: hints.length > 0 ? Math.max(...hints) : undefined,
    },
    schedule,
    random,
  );
  if (!next) return { ...completion, status: "expired" };
  return { ...completion, status: "retrying", runAt: next, retryUrls: retryable.map((r) => r.url) };
}

/** A delivery handed back untouched (destination disabled, or shutting down). */
export function releaseCompletion(job: ClaimedDelivery, now: Date, status: "cancelled" | "release"): DeliveryCompletion {
  return {
    destinationId: job.destinationId,
    id: job.id,
    leaseToken: job.leaseToken,
    status: status === "cancelled" ? "cancelled" : job.attemptCount > 0 ? "retrying" : "pending",
    runAt: now,
    attempted: false,
    attemptedAt: now,
    retryUrls: job.retryUrls,
    attempts: [],
  };
}
