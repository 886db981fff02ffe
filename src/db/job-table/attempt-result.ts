// An attempt as the job table stores it (a delivery_attempts row). The
// sender produces it, the completion writes it: the table owns its shape.

export type AttemptOutcome = "success" | "retryable" | "permanent" | "abandoned";

/** The result of one request to one URL, as recorded in delivery_attempts. */
export interface AttemptResult {
  urlIndex: number;
  url: string;
  attemptedAt: Date;
  outcome: AttemptOutcome;
  statusCode: number | null;
  error: string | null;
  latencyMs: number;
  responseBody: string | null;
  retryAfterMs?: number | undefined;
  /** The destination's settings revision the attempt was made with. */
  destinationRevision?: number | undefined;
  /** A warehouse load: values of the call not stored in their columns (kept in the warehouse's discards table). */
  discardedValues?: number | undefined;
  /** The body sent, when the destination's rules changed it (absent: the stored body). */
  sentBody?: string | undefined;
  /** An integration: the subscription whose action made the request. */
  subscription?: string | undefined;
  /** An integration: the request's method (undefined: the action failed before any request). */
  method?: string | undefined;
  /** What the attempt sent, when it is not the stored call (an integration's request); kept per attempt. */
  request?: SentRequest | undefined;
  /** The batch operation this attempt was part of (one request or transaction for many calls). */
  batch?: BatchAttemptRef | undefined;
}

/** A request as an attempt keeps it: secrets already masked, the body already cut to its bound. */
export interface SentRequest {
  headers: Record<string, string>;
  body: string;
  /** The body's full size in bytes (more than `body` holds when it was cut). */
  bodyBytes: number;
}

/**
 * A batch operation, as each of its calls' attempts names it. Every call's
 * AttemptResult from one operation carries the same object; what may
 * differ per call is its outcome, its error (a per-item failure), sentBody,
 * discardedValues and retryAfterMs. The job table writes the operation's
 * attempt once (delivery_batch_attempts) and references it from each call's
 * delivery.
 */
export interface BatchAttemptRef {
  /** A random UUID made by the sender, one per batch operation (per POST, per warehouse transaction, per broker publish round). */
  id: string;
  /** How many calls the operation carried. */
  calls: number;
}
