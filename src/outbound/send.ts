import type { Dispatcher } from "undici";
import type { AttemptOutcome, AttemptResult } from "../db/job-table/index.js";
import type { AddressGuard } from "./address-guard.js";
import { refuseLiteralAddress } from "./http-client.js";
import { postWebhook } from "./post-webhook.js";
import { parseRetryAfter } from "./retry-after.js";

export type { AttemptOutcome, AttemptResult } from "../db/job-table/index.js";

export interface WebhookRequest {
  urlIndex: number;
  url: string;
  /** `url`, parsed. */
  target: URL;
  headers: Record<string, string>;
  body: string;
}

export interface SendContext {
  dispatcher: Dispatcher;
  guard: AddressGuard;
  timeoutMs: number;
  now: () => Date;
  /** Aborted when another URL of the delivery has succeeded. */
  signal?: AbortSignal;
}

const maxRecordedBody = 1024;
/** Past this much response body the connection is dropped rather than drained. */
const maxDrainedBody = 64 * 1024;

/** Sends one webhook request and classifies the outcome (see docs/webhooks.md#outcomes). */
export async function sendWebhook(request: WebhookRequest, ctx: SendContext): Promise<AttemptResult> {
  const attemptedAt = ctx.now();
  const started = performance.now();
  // One object of one shape per attempt (the loop sets the last two fields
  // in place): no spread of a partial result, which cost an allocation and
  // a generic copy per webhook.
  const result = (
    outcome: AttemptOutcome,
    error: string | null,
    statusCode: number | null = null,
    responseBody: string | null = null,
    retryAfterMs: number | undefined = undefined,
  ): AttemptResult => ({
    urlIndex: request.urlIndex,
    url: request.url,
    attemptedAt,
    outcome,
    statusCode,
    error,
    latencyMs: Math.round(performance.now() - started),
    responseBody,
    retryAfterMs,
    destinationRevision: undefined,
    sentBody: undefined,
  });
  const url = request.target;
  const refused = refuseLiteralAddress(ctx.guard, url);
  if (refused) return result("permanent", refused);
  try {
    // The dispatcher enforces the time limit (connect, headers and body
    // timeouts); a per-request AbortSignal timer would cost more than the request.
    const response = await postWebhook(ctx.dispatcher, {
      origin: url.origin,
      path: url.pathname + url.search,
      headers: request.headers,
      body: request.body,
      signal: ctx.signal,
      keepBytes: maxRecordedBody,
      drainBytes: maxDrainedBody,
    });
    const status = response.statusCode;
    const outcome = classifyStatus(status);
    const retryAfterMs = outcome === "retryable" ? parseRetryAfter(response.retryAfter, ctx.now()) : undefined;
    return result(outcome, null, status, withoutNul(response.body), retryAfterMs);
  } catch (error) {
    if (ctx.signal?.aborted) return result("abandoned", "not awaited: another webhook of this delivery succeeded");
    if (timeoutCodes.has(errorCode(error) ?? "")) return result("retryable", `no response within ${ctx.timeoutMs} ms`);
    const classified = classifyError(error);
    return result(classified.outcome, classified.error);
  }
}

const timeoutCodes = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "UND_ERR_CONNECT_TIMEOUT"]);

export function classifyStatus(status: number): AttemptOutcome {
  if (status >= 200 && status < 300) return "success";
  if (status >= 500 || status === 408 || status === 429) return "retryable";
  return "permanent";
}

const tlsCodes = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_UNTRUSTED",
  "CERT_REVOKED",
  "CERT_SIGNATURE_FAILURE",
]);

/** Network-level failures: TLS trust and refused addresses are final, the rest transient. */
export function classifyError(error: unknown): Pick<AttemptResult, "outcome" | "error"> {
  const code = errorCode(error);
  const message = error instanceof Error ? error.message : String(error);
  if (code && tlsCodes.has(code)) {
    return { outcome: "permanent", error: `TLS certificate not trusted (${code}): ${message}; no request was sent` };
  }
  if (code === "EWAYPOST_REFUSED_ADDRESS") return { outcome: "permanent", error: message };
  return { outcome: "retryable", error: withoutNul(code ? `${code}: ${message}` : message) };
}

/** The code of an error or of the first cause that has one (undici wraps the socket's error: its own UND_ERR_SOCKET says less). */
export function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current && typeof current === "object"; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && code !== "UND_ERR_SOCKET") return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Postgres text cannot hold NUL, and a response body may contain anything. */
export function withoutNul(text: string): string {
  return text.includes("\0") ? text.replaceAll("\0", "\uFFFD") : text;
}
