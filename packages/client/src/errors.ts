/**
 * Why a queued call was not delivered, as reported to `onFailure`:
 *
 * - `rejected`: the server refused this call (it is listed in the batch
 *   response's `rejected`, with the server's reason). Never retried.
 * - `permanent`: the whole request failed with an error that retrying cannot
 *   fix (`unauthenticated`, `invalid_argument`, ...). Never retried.
 * - `retries_exhausted`: transient errors persisted through every retry.
 * - `overflow`: the queue was full when the call was made; it was dropped.
 * - `closed`: `close()` reached its timeout before the call was acknowledged.
 */
export type FailureReason = "rejected" | "permanent" | "retries_exhausted" | "overflow" | "closed";

/** The error `onFailure` receives. */
export class AnalyticsError extends Error {
  override name = "AnalyticsError";
  /** Which of the failure kinds this is. */
  readonly reason: FailureReason;
  /** The Connect error code's name (`"unavailable"`, ...) when a request failed. */
  readonly code: string | undefined;

  constructor(reason: FailureReason, message: string, options: { cause?: unknown; code?: string } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
    this.code = options.code;
  }
}

/**
 * Thrown synchronously by `track()` and the other call methods for a call
 * that the server would refuse: a missing required field, a wrong type, or a
 * call over 32 KB. `field` names the offending field (`"message"` for size).
 */
export class InvalidCallError extends Error {
  override name = "InvalidCallError";
  readonly field: string;

  constructor(field: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.field = field;
  }
}
