/**
 * The one error an object store throws, whichever backend: what failed
 * (`PUT s3://bucket/key`), why, and whether trying again later can succeed.
 * The lake's delivery turns `retryable` into a retry on the normal schedule
 * and anything else into a permanent failure the operator must fix (a wrong
 * key, a missing bucket).
 */
export class ObjectStoreError extends Error {
  constructor(
    message: string,
    /** Whether the same request may succeed later: an outage, throttling, a network error. */
    readonly retryable: boolean,
    /** The HTTP status the store answered, when it answered at all. */
    readonly status?: number,
    /** The store's own error code (`AccessDenied`, `NoSuchBucket`, `ENOENT`), when it gave one. */
    readonly code?: string,
  ) {
    super(message);
    this.name = "ObjectStoreError";
  }
}

// S3 error codes that say "slow down" or "try again" whatever the status.
const retryableCodes = new Set([
  "SlowDown",
  "Throttling",
  "ThrottlingException",
  "RequestTimeout",
  "RequestTimeTooSkewed",
  "InternalError",
  "ServiceUnavailable",
  "TimeoutError",
]);

// Node's socket and DNS errors: the store could not be reached or dropped the connection.
const networkCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EAI_AGAIN",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_SOCKET",
]);

/**
 * Whether an answer is worth retrying: 5xx, 429 and 408 are the store's
 * trouble; any other 4xx (403 for a wrong key, 404 for a missing bucket) is
 * a setting the operator must change, and retrying would fail the same way.
 */
export function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 429 || status === 408;
}

/**
 * An AWS SDK (or socket) error as an ObjectStoreError. The message is built
 * from the status, the code and the store's own message only: the SDK's
 * errors never carry the secret key, and nothing here adds request
 * headers or credentials, but `secrets` are scrubbed all the same in case a
 * store echoes one back.
 */
export function storeError(what: string, error: unknown, secrets: readonly string[] = []): ObjectStoreError {
  if (error instanceof ObjectStoreError) return error;
  const e = (error ?? {}) as {
    name?: unknown;
    code?: unknown;
    message?: unknown;
    $metadata?: { httpStatusCode?: number };
    $fault?: unknown;
  };
  const status = e.$metadata?.httpStatusCode;
  const code = typeof e.code === "string" ? e.code : typeof e.name === "string" ? e.name : undefined;
  let retryable: boolean;
  if (status !== undefined) retryable = isRetryableStatus(status) || (code !== undefined && retryableCodes.has(code));
  else retryable = code === undefined || networkCodes.has(code) || retryableCodes.has(code) || e.$fault === "server";
  let detail = typeof e.message === "string" && e.message !== "" && e.message !== "UnknownError" ? e.message : "";
  for (const secret of secrets) if (secret !== "") detail = detail.replaceAll(secret, "***");
  const parts = [status !== undefined ? `HTTP ${status}` : undefined, code, detail || undefined].filter(Boolean);
  return new ObjectStoreError(`${what} failed: ${parts.join(" ") || "unknown error"}`, retryable, status, code);
}
