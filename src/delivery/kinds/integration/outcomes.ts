import type { AttemptOutcome, AttemptResult, SentRequest } from "../../../db/job-table/index.js";
import { actionsCore } from "../../../catalog/catalog-entry.js";
import { maskText, type VendorRequestRecord, VendorTransportError } from "../../../catalog/catalog-fetch.js";
import { classifyError } from "../../../outbound/send.js";
import { parseRetryAfter } from "../../../outbound/retry-after.js";

/** How one subscription's run ended: its outcome and, when it failed, the action's message. */
export interface SubscriptionVerdict {
  outcome: Exclude<AttemptOutcome, "abandoned">;
  /** null on success. */
  message: string | null;
  /** A batch's item the catalog refused before sending (its own validation): it was in no request. */
  notSent?: boolean;
}

/** How much of a vendor's error body an attempt's error quotes (the attempt keeps the first KB). */
const maxVendorText = 300;

type ErrorClass = new (...args: never[]) => Error;

function isInstance(error: unknown, name: string): boolean {
  const core = actionsCore() as unknown as Record<string, ErrorClass | undefined>;
  const cls = core[name];
  return cls !== undefined && error instanceof cls;
}

function retryableStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}

/**
 * The outcome of an action that threw, as the integrations page documents
 * it: an answer's status decides (5xx, 408, 429 retried; other 4xx final);
 * no answer (a timeout, a connection error) is retried, but for the
 * transport's final refusals (an untrusted certificate, a refused address);
 * the catalog's RetryableError is retried; its validation, authentication
 * and integration errors are final, unless an integration error carries a
 * status that is retried (APIError 503, SelfTimeoutError 408: the catalog's
 * own way of asking for a retry). Anything else an action throws is a
 * mistake retrying cannot fix: final.
 */
export function verdictOfError(error: unknown, secrets: readonly string[]): SubscriptionVerdict {
  const text = (message: string) => maskText(message, secrets);
  const err = error as { name?: string; message?: string; status?: unknown; response?: { status?: number }; code?: string };
  const message = err?.message ?? String(error);
  if (error instanceof VendorTransportError) {
    const classified = classifyError(error.cause ?? error);
    return { outcome: classified.outcome === "permanent" ? "permanent" : "retryable", message: text(classified.error ?? message) };
  }
  if (isInstance(error, "RetryableError")) return { outcome: "retryable", message: text(message) };
  if (err?.name === "HTTPError" && typeof err.response?.status === "number") {
    const status = err.response.status;
    // The vendor's own words are in the body (prepare-response keeps it as `content`).
    const content = (err.response as { content?: unknown }).content;
    const said = typeof content === "string" && content.trim() !== "" ? `: ${content.trim().slice(0, maxVendorText)}` : "";
    return { outcome: retryableStatus(status) ? "retryable" : "permanent", message: text(`${status} ${message}${said}`) };
  }
  if (err?.name === "TimeoutError" || err?.name === "RequestTimeoutError" || err?.name === "RequestClientError") {
    return { outcome: "retryable", message: text(message) };
  }
  if (err?.name === "AggregateAjvError" || err?.name === "ValidationError" || isInstance(error, "PayloadValidationError")) {
    return { outcome: "permanent", message: text(message) };
  }
  if (isInstance(error, "InvalidAuthenticationError")) return { outcome: "permanent", message: text(message) };
  if (isInstance(error, "IntegrationError")) {
    const status = typeof err.status === "number" ? err.status : 400;
    return { outcome: retryableStatus(status) ? "retryable" : "permanent", message: text(message) };
  }
  return { outcome: "permanent", message: text(message) };
}

/** The outcome of one item of a batch, from the catalog's per-item status. */
export function verdictOfItem(item: Record<string, unknown> | undefined, secrets: readonly string[]): SubscriptionVerdict {
  const status = typeof item?.status === "number" ? item.status : 500;
  if (status >= 200 && status < 300) return { outcome: "success", message: null };
  const body = item?.body;
  const detail =
    typeof item?.errormessage === "string"
      ? item.errormessage
      : typeof body === "string"
        ? body
        : body !== undefined
          ? JSON.stringify(body)
          : `status ${status}`;
  return {
    outcome: retryableStatus(status) ? "retryable" : "permanent",
    message: maskText(detail, secrets),
    notSent: item?.errorreporter === "INTEGRATIONS",
  };
}

/**
 * The attempt entries of one subscription's run: one per request it made,
 * named by the subscription. The run's verdict is its last request's
 * outcome (the request that failed it; earlier requests the action got past
 * are successes whatever their status); a run that failed before any
 * request still gets one entry, with no method or status.
 */
export function attemptsOfRun(
  subscription: string,
  subscriptionIndex: number,
  requests: readonly VendorRequestRecord[],
  verdict: SubscriptionVerdict,
  now: Date,
  label: string,
): AttemptResult[] {
  const error = verdict.message === null ? null : `subscription "${subscription}": ${verdict.message}`;
  if (requests.length === 0) {
    return [
      {
        urlIndex: subscriptionIndex * requestsPerSubscription,
        url: label,
        attemptedAt: now,
        outcome: verdict.outcome,
        statusCode: null,
        error,
        latencyMs: 0,
        responseBody: null,
        subscription,
        method: undefined,
        destinationRevision: undefined,
        sentBody: undefined,
      },
    ];
  }
  return requests.slice(0, requestsPerSubscription).map((r, i) => {
    const last = i === requests.length - 1;
    const outcome: AttemptOutcome = last ? verdict.outcome : "success";
    const retryAfterMs = last && outcome === "retryable" && r.retryAfter ? parseRetryAfter(r.retryAfter, now) : undefined;
    return {
      urlIndex: subscriptionIndex * requestsPerSubscription + i,
      url: r.url,
      attemptedAt: r.attemptedAt,
      outcome,
      statusCode: r.status,
      error: last ? error : null,
      latencyMs: r.latencyMs,
      responseBody: r.responseBody,
      retryAfterMs,
      subscription,
      method: r.method,
      request: sentRequestOf(r),
      destinationRevision: undefined,
      sentBody: undefined,
    };
  });
}

/** How much of a request's body an attempt keeps (docs/limits.md): a batch's request can run to megabytes. */
export const maxKeptRequestBody = 64 * 1024;

// One kept request per recorded request: the calls of a batch share it (and its cut body).
const kept = new WeakMap<VendorRequestRecord, SentRequest>();

/** The request as its attempt keeps it: headers and body as recorded (secrets masked), the body cut to its bound. */
export function sentRequestOf(record: VendorRequestRecord): SentRequest {
  let request = kept.get(record);
  if (!request) {
    const bytes = Buffer.byteLength(record.body);
    const body = bytes <= maxKeptRequestBody ? record.body : cutUtf8(record.body, maxKeptRequestBody);
    request = { headers: record.headers, body, bodyBytes: bytes };
    kept.set(record, request);
  }
  return request;
}

/** The longest start of `text` within `bytes` bytes of UTF-8, never splitting a character. */
export function cutUtf8(text: string, bytes: number): string {
  const buffer = Buffer.from(text, "utf8").subarray(0, bytes);
  // The last character's lead byte (continuation bytes are 10xxxxxx), and how long its sequence is.
  let lead = buffer.length - 1;
  while (lead > 0 && (buffer[lead]! & 0xc0) === 0x80) lead--;
  const first = buffer[lead] ?? 0;
  const length = first >= 0xf0 ? 4 : first >= 0xe0 ? 3 : first >= 0xc0 ? 2 : 1;
  return buffer.subarray(0, lead + length > buffer.length ? lead : buffer.length).toString("utf8");
}

/**
 * Attempt entries are keyed by their url_index within a delivery's attempt:
 * subscription i's requests take i*1000 onwards (so they sort by
 * subscription, then request). Past 1000 requests in one run, the rest are
 * not logged (their outcome still counts).
 */
export const requestsPerSubscription = 1000;
