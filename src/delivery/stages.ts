import type { RetrySchedule } from "../config.js";
import type { ClaimedDelivery, DeliveryCompletion } from "../db/job-table/index.js";
import type { DestinationConfigRow } from "../db/queries/destinations.js";
import { nextRetryAt } from "./retry-policy.js";
import { sendWebhook, type AttemptResult, type SendContext, type WebhookRequest } from "../outbound/send.js";
import { activeSigningSecrets, signingKey, standardWebhookHeaders } from "../signing/standard-webhooks.js";
import { signPayload } from "../outbound/sign.js";
import { userAgent } from "../outbound/user-agent.js";
import { traceHeaders } from "../tracing/trace-context.js";

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

// Keyed by the webhook objects of the destination rows the loop holds (one
// per destination and settings revision): a settings change brings new
// objects, and entries go with their rows.
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

// Decoded signing keys, per destination row (one per settings revision).
const keys = new WeakMap<DestinationConfigRow, { at: number; keys: Buffer[] }>();

/** The keys of the secrets active at `now`; [] when the destination does not sign this way. */
function signingKeysOf(destination: DestinationConfigRow, now: Date): Buffer[] {
  if (destination.signing_secrets.length === 0) return [];
  const cached = keys.get(destination);
  // Keys are decoded once per row (a settings revision) and second: a
  // secret may expire while the row is in use.
  const second = Math.floor(now.getTime() / 1000);
  if (cached && cached.at === second) return cached.keys;
  const active = activeSigningSecrets(destination.signing_secrets, now).map((s) => signingKey(s.secret));
  keys.set(destination, { at: second, keys: active });
  return active;
}

/** The headers every request of this attempt carries besides the webhook's own. */
function signatureHeaders(job: ClaimedDelivery, destination: DestinationConfigRow, now: Date, body: string): Record<string, string> {
  const headers: Record<string, string> = {};
  if (destination.shared_secret) headers["x-signature"] = signPayload(destination.shared_secret, body);
  const signingKeys = signingKeysOf(destination, now);
  // webhook-id is the message's id, the same on every retry, so receivers
  // can drop duplicates; the timestamp is this attempt's.
  if (signingKeys.length > 0) Object.assign(headers, standardWebhookHeaders(signingKeys, job.messageId, now, body));
  return headers;
}

/**
 * Stage 1, prepare: the requests to send. The body is the stored payload,
 * byte for byte, or what the destination's rules made of it (shapeBody);
 * the signatures are computed over exactly the bytes sent.
 * `now` is the attempt's time (the Standard Webhooks timestamp).
 */
export function prepareDelivery(
  job: ClaimedDelivery,
  destination: DestinationConfigRow | undefined,
  now: Date,
  body: string = job.payload,
): Preparation {
  if (!destination) return { kind: "cancel", reason: "destination deleted" };
  if (!destination.enabled) return { kind: "release", reason: "destination disabled" };
  const extra = signatureHeaders(job, destination, now, body);
  // The call's trace context goes out as it came; with tracing on, the
  // attempt's span replaces traceparent with its own (attempt-spans.ts).
  if (job.traceparent) Object.assign(extra, traceHeaders({ traceparent: job.traceparent, tracestate: job.tracestate ?? undefined }));
  const hasExtra = Object.keys(extra).length > 0;
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
      body,
      headers: hasExtra ? { ...target.headers, ...extra } : target.headers,
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
    probe: job.probe,
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
    probe: job.probe,
  };
}

/**
 * A delivery put off unattempted until `runAt` (its destination's transform
 * sandbox has more waiting than it can run soon): handed back, so it holds
 * no slot meanwhile.
 */
export function deferredCompletion(job: ClaimedDelivery, runAt: Date): DeliveryCompletion {
  return { ...releaseCompletion(job, runAt, "release"), attemptedAt: runAt };
}

/**
 * A delivery whose transform failed: failed at once (retrying cannot help
 * until the transform is fixed; RetryDeliveries sends it again then), with
 * one permanent attempt carrying the error, so it shows where every failure does.
 */
export function transformFailedCompletion(
  job: ClaimedDelivery,
  destination: DestinationConfigRow,
  error: string,
  now: Date,
): DeliveryCompletion {
  const webhook = destination.webhooks[0]!;
  return {
    ...releaseCompletion(job, now, "release"),
    status: "failed",
    attempted: true,
    retryUrls: null,
    attempts: [
      {
        urlIndex: 0,
        url: webhook.url,
        attemptedAt: now,
        outcome: "permanent",
        statusCode: null,
        error,
        latencyMs: 0,
        responseBody: null,
        destinationRevision: destination.revision,
      },
    ],
  };
}
