import type { Interceptor, Transport } from "@connectrpc/connect";
import type { AnalyticsError } from "./errors.js";
import { defaultRetryPolicy, type RetryPolicy } from "./retry.js";
import type { CallRecord } from "./types.js";

/**
 * Options of `new Analytics(options)`. Only `writeKey` and `endpoint` are
 * required; the defaults are meant for production, as the Go library's are.
 */
export interface AnalyticsOptions {
  /** The source's write key (Go: the argument of `analytics.New`). */
  writeKey: string;
  /**
   * Base URL of the Waypost server, e.g. `"http://127.0.0.1:8080"` or
   * `"https://waypost.example.com"` (Go: `Config.Endpoint`).
   */
  endpoint: string;
  /**
   * Send a batch when this many calls are queued. Default 20; `1` sends each
   * call at once (Go: `FlushAt` / `Size`).
   */
  flushAt?: number;
  /**
   * Send what is queued this many milliseconds after the first call queued
   * since the last send. Default 5000 (Go: `FlushAfter`).
   */
  flushInterval?: number;
  /**
   * Calls held in memory at most: queued, in flight and waiting for a retry.
   * A call made when the client holds this many is dropped and reported to
   * `onFailure` with reason `overflow`. Default 10000.
   */
  maxQueueSize?: number;
  /** Batch requests in flight at once. Default 8. */
  maxConcurrentRequests?: number;
  /** Retries of a batch after transient failures. Default 10. */
  maxRetries?: number;
  /** First wait before a retry, doubling each time, with jitter. Default 100 ms. */
  initialBackoff?: number;
  /** Longest wait between two attempts. Default 10000 ms. */
  maxBackoff?: number;
  /** A server's `Retry-After` is honoured up to this many ms. Default 60000. */
  maxRetryAfter?: number;
  /** Time one request may take before it is retried. Default 10000 ms. */
  requestTimeout?: number;
  /**
   * How long `close()` waits for queued and retrying calls before it gives
   * up on them (reporting them with reason `closed`). Default 30000 ms.
   */
  closeTimeout?: number;
  /** Called once per call the server acknowledged (Go: `Callback.Success`). */
  onSuccess?: (call: CallRecord) => void;
  /**
   * Called once per call that was not delivered, with the reason
   * (Go: `Callback.Failure`). Without it, failures are logged to stderr.
   */
  onFailure?: (call: CallRecord, error: AnalyticsError) => void;
  /**
   * A Connect transport to use instead of the default one. The client adds
   * the write key's `Authorization` header to it, and does not close it.
   */
  transport?: Transport;
  /** Node only: HTTP version of the default transport. Default `"1.1"`. */
  httpVersion?: "1.1" | "2";
  /** Interceptors for the default transport (e.g. to observe requests). */
  interceptors?: Interceptor[];
  /**
   * Writes the debug log. Default: on when the `DEBUG` environment variable
   * names `analytics` (Go: `Config.Verbose`).
   */
  debug?: boolean;
  /** Receives each log line instead of stderr (Go: `Config.Logger`). */
  logger?: (line: string) => void;
  /**
   * Where each call's `traceparent` comes from; a batch is sent with the one
   * of its first call that has one. Default: the active OpenTelemetry
   * context when `@opentelemetry/api` is installed (read at the call); a
   * function of your own; `false`: never send one.
   */
  traceparent?: (() => string | undefined) | false;
}

/** The options with every default filled in. */
export interface ResolvedOptions {
  writeKey: string;
  endpoint: string;
  flushAt: number;
  flushIntervalMs: number;
  maxQueueSize: number;
  maxConcurrentRequests: number;
  retry: RetryPolicy;
  requestTimeoutMs: number;
  closeTimeoutMs: number;
}

export const defaults = {
  flushAt: 20,
  flushInterval: 5_000,
  maxQueueSize: 10_000,
  maxConcurrentRequests: 8,
  requestTimeout: 10_000,
  closeTimeout: 30_000,
} as const;

/** Fills in defaults; throws a TypeError naming the option that is wrong. */
export function resolveOptions(options: AnalyticsOptions): ResolvedOptions {
  if (options === null || typeof options !== "object") {
    throw new TypeError("Analytics needs an options object: new Analytics({ writeKey, endpoint })");
  }
  if (typeof options.writeKey !== "string" || options.writeKey === "") {
    throw new TypeError("options.writeKey is required: the write key of a Waypost source");
  }
  if (options.httpVersion !== undefined && options.httpVersion !== "1.1" && options.httpVersion !== "2") {
    throw new TypeError(`options.httpVersion must be "1.1" or "2", got ${JSON.stringify(options.httpVersion)}`);
  }
  return {
    writeKey: options.writeKey,
    endpoint: checkEndpoint(options.endpoint),
    flushAt: count("flushAt", options.flushAt, defaults.flushAt, 1),
    flushIntervalMs: count("flushInterval", options.flushInterval, defaults.flushInterval, 1),
    maxQueueSize: count("maxQueueSize", options.maxQueueSize, defaults.maxQueueSize, 1),
    maxConcurrentRequests: count("maxConcurrentRequests", options.maxConcurrentRequests, defaults.maxConcurrentRequests, 1),
    retry: {
      maxRetries: count("maxRetries", options.maxRetries, defaultRetryPolicy.maxRetries, 0),
      initialBackoffMs: count("initialBackoff", options.initialBackoff, defaultRetryPolicy.initialBackoffMs, 0),
      maxBackoffMs: count("maxBackoff", options.maxBackoff, defaultRetryPolicy.maxBackoffMs, 0),
      maxRetryAfterMs: count("maxRetryAfter", options.maxRetryAfter, defaultRetryPolicy.maxRetryAfterMs, 0),
    },
    requestTimeoutMs: count("requestTimeout", options.requestTimeout, defaults.requestTimeout, 1),
    closeTimeoutMs: count("closeTimeout", options.closeTimeout, defaults.closeTimeout, 0),
  };
}

/** Base URL without a trailing slash; only http and https. */
export function checkEndpoint(endpoint: unknown): string {
  if (typeof endpoint !== "string" || endpoint === "") {
    throw new TypeError('options.endpoint is required: the Waypost server\'s URL, e.g. "http://127.0.0.1:8080"');
  }
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new TypeError(`options.endpoint must be an absolute http:// or https:// URL, got ${JSON.stringify(endpoint)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`options.endpoint must use http or https, got ${JSON.stringify(endpoint)}`);
  }
  return endpoint.replace(/\/+$/, "");
}

function count(name: string, value: number | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value < min || Math.floor(value) !== value) {
    throw new TypeError(`options.${name} must be an integer of at least ${min}, got ${String(value)}`);
  }
  return value;
}
