import { Code, ConnectError } from "@connectrpc/connect";
import { RequestTooLargeSchema } from "../../../gen/waypost/v1/tracking_pb.js";

/** How a batch that failed as a whole is retried. */
export interface RetryPolicy {
  /**
   * Retries after the first attempt before the batch's calls are reported
   * as failed with reason `retries_exhausted`. Default 10.
   */
  maxRetries: number;
  /** First wait; it doubles per retry. Default 100 ms. */
  initialBackoffMs: number;
  /** Longest wait between two attempts. Default 10 s. */
  maxBackoffMs: number;
  /**
   * A server's `Retry-After` is honoured up to this long. Default 60 s, so a
   * hostile or broken hint cannot park calls in memory for hours.
   */
  maxRetryAfterMs: number;
}

export const defaultRetryPolicy: RetryPolicy = {
  maxRetries: 10,
  initialBackoffMs: 100,
  maxBackoffMs: 10_000,
  maxRetryAfterMs: 60_000,
};

/** What to do with a batch whose request failed. */
export type FailureAction =
  | { action: "retry"; retryAfterMs: number | undefined }
  /** The request was too large for the server: send it again as two. */
  | { action: "split" }
  /** Retrying cannot help (bad key, invalid request, ...). */
  | { action: "fail" };

/**
 * Transient conditions, worth the same request again: the server or network
 * is down or overloaded (`unavailable`, which connection refused maps to;
 * `resource_exhausted`), slow (`deadline_exceeded`), or the connection broke
 * (`aborted` is what a reset connection maps to; `internal`/`unknown` are
 * what proxies and broken streams produce). Retrying is safe because every
 * call carries its messageId and the server acknowledges repeats without
 * storing them twice.
 */
const retryableCodes = new Set<Code>([
  Code.Unavailable,
  Code.ResourceExhausted,
  Code.DeadlineExceeded,
  Code.Aborted,
  Code.Internal,
  Code.Unknown,
]);

/**
 * Decided from the error's code and structured details only, never from the
 * text of its message (which servers and proxies are free to reword):
 * - `resource_exhausted` carrying a `waypost.v1.RequestTooLarge` detail: the
 *   request was over the server's size limit; it is split in two and resent.
 * - the transient codes above (a `resource_exhausted` without that detail is
 *   a rate limit): retried, after the server's `Retry-After` when it gives one.
 * - anything else (`invalid_argument`, `unauthenticated`, ...): failed.
 */
export function classifyFailure(error: ConnectError): FailureAction {
  if (error.code === Code.ResourceExhausted && requestTooLarge(error) !== undefined) return { action: "split" };
  if (!retryableCodes.has(error.code)) return { action: "fail" };
  return { action: "retry", retryAfterMs: parseRetryAfter(error.metadata.get("retry-after")) };
}

/** The server's size limit in bytes, when the error says the request was too large. */
export function requestTooLarge(error: ConnectError): number | undefined {
  try {
    const [detail] = error.findDetails(RequestTooLargeSchema);
    return detail === undefined ? undefined : Number(detail.limitBytes);
  } catch {
    // A detail that does not decode is as good as none.
    return undefined;
  }
}

/**
 * Wait before retry number `attempt` (1 for the first retry): exponential,
 * capped, with "equal jitter" (half fixed, half random) so that many clients
 * failing together do not come back together. A server hint wins, capped,
 * plus up to 10% so clients told the same time still spread out.
 */
export function retryDelayMs(
  attempt: number,
  policy: RetryPolicy,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number {
  if (retryAfterMs !== undefined) {
    const hint = Math.min(retryAfterMs, policy.maxRetryAfterMs);
    return Math.ceil(hint + random() * hint * 0.1);
  }
  const exponential = Math.min(policy.maxBackoffMs, policy.initialBackoffMs * 2 ** (attempt - 1));
  return Math.round(exponential / 2 + (random() * exponential) / 2);
}

/**
 * `Retry-After` as delay-seconds (fractions allowed) or an HTTP date;
 * undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (trimmed === "") return undefined;
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** Any thrown value as a ConnectError (connect already wraps network errors). */
export function asConnectError(error: unknown): ConnectError {
  return ConnectError.from(error);
}
