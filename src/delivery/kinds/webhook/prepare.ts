import type { ClaimedDelivery } from "../../../db/job-table/index.js";
import type { WebhookRequest } from "../../../outbound/send.js";
import { signPayload } from "../../../outbound/sign.js";
import { userAgent } from "../../../outbound/user-agent.js";
import { activeSigningSecrets, signingKey, standardWebhookHeaders } from "../../../signing/standard-webhooks.js";
import { traceHeaders } from "../../../tracing/trace-context.js";
import type { DestinationOf } from "../kind.js";
import type { StoredWebhook, WebhookSettings } from "./settings.js";

export type WebhookDestination = DestinationOf<"webhook", WebhookSettings>;

/** What every request to one webhook shares: parsed once per settings revision. */
export interface WebhookTarget {
  url: URL;
  headers: Record<string, string>;
}

// Keyed by the webhook objects of the destinations the loop holds (one per
// destination and settings revision): a settings change brings new
// objects, and entries go with them.
const targets = new WeakMap<StoredWebhook, WebhookTarget>();

export function targetOf(webhook: StoredWebhook): WebhookTarget {
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

// Decoded signing keys, per settings object (one per settings revision).
const keys = new WeakMap<WebhookSettings, { at: number; keys: Buffer[] }>();

/** The keys of the secrets active at `now`; [] when the destination does not sign this way. */
function signingKeysOf(settings: WebhookSettings, now: Date): Buffer[] {
  if (settings.signingSecrets.length === 0) return [];
  const cached = keys.get(settings);
  // Keys are decoded once per revision and second: a secret may expire while the settings are in use.
  const second = Math.floor(now.getTime() / 1000);
  if (cached && cached.at === second) return cached.keys;
  const active = activeSigningSecrets(settings.signingSecrets, now).map((s) => signingKey(s.secret));
  keys.set(settings, { at: second, keys: active });
  return active;
}

/**
 * The signatures of a request body: X-Signature and Standard Webhooks
 * (`id` is its webhook-id; the timestamp is this attempt's).
 */
export function signatureHeaders(id: string, settings: WebhookSettings, now: Date, body: string): Record<string, string> {
  const headers: Record<string, string> = {};
  if (settings.sharedSecret) headers["x-signature"] = signPayload(settings.sharedSecret, body);
  const signingKeys = signingKeysOf(settings, now);
  if (signingKeys.length > 0) Object.assign(headers, standardWebhookHeaders(signingKeys, id, now, body));
  return headers;
}

/**
 * The webhooks an attempt of this call goes to: on a retry, only the URLs
 * that failed retryably; if the settings changed so that none of them is
 * configured any more, every URL.
 */
export function chosenWebhooks(job: ClaimedDelivery, settings: WebhookSettings): readonly StoredWebhook[] {
  const retryUrls = job.retryUrls;
  const retrying = retryUrls ? settings.webhooks.filter((w) => retryUrls.includes(w.url)) : [];
  return retrying.length > 0 ? retrying : settings.webhooks;
}

/**
 * The webhook kind's prepare: the requests of one attempt. The body is the
 * stored payload, byte for byte, or what the destination's rules made of it;
 * the signatures are computed over exactly the bytes sent. `now` is the
 * attempt's time (the Standard Webhooks timestamp).
 */
export function prepareRequests(
  job: ClaimedDelivery,
  destination: WebhookDestination,
  now: Date,
  body: string = job.payload,
  chosen: readonly StoredWebhook[] = chosenWebhooks(job, destination.webhook),
): WebhookRequest[] {
  const settings = destination.webhook;
  // webhook-id is the message's id, the same on every retry, so receivers can drop duplicates.
  const extra = signatureHeaders(job.messageId, settings, now, body);
  // The call's trace context goes out as it came; with tracing on, the
  // attempt's span replaces traceparent with its own (attempt-spans.ts).
  if (job.traceparent) Object.assign(extra, traceHeaders({ traceparent: job.traceparent, tracestate: job.tracestate ?? undefined }));
  const hasExtra = Object.keys(extra).length > 0;
  return chosen.map((webhook) => {
    const target = targetOf(webhook);
    return {
      urlIndex: settings.webhooks.indexOf(webhook),
      url: webhook.url,
      target: target.url,
      body,
      headers: hasExtra ? { ...target.headers, ...extra } : target.headers,
    };
  });
}
