import type { TraceContext } from "./trace-context.js";

/** Span attribute values, as OpenTelemetry takes them. */
export type SpanAttributes = Record<string, string | number | boolean>;

/** A tracking request's server span. */
export interface RequestSpan {
  /**
   * The context stored with the request's calls: the span's own when
   * tracing is on, else the incoming one as it came (undefined: none).
   */
  readonly stored: TraceContext | undefined;
  /** Adds attributes (source id, calls accepted and rejected). */
  set(attributes: SpanAttributes): void;
  /** Ends the span; `error` marks it failed. */
  end(error?: string): void;
}

/** One webhook request's client span. */
export interface AttemptSpan {
  /** The traceparent (and tracestate) this request carries: the span's, a child of the call's context. */
  readonly headers: Record<string, string>;
  end(attributes: SpanAttributes, error?: string): void;
}

export interface RequestSpanOptions {
  name: string;
  incoming: TraceContext | undefined;
  attributes: SpanAttributes;
}

/**
 * What the rest of Waypost knows of tracing. With it off nothing is
 * recorded, and calls keep the context they came with; with it on
 * (src/tracing/otel-tracing.ts) requests and attempts are spans.
 */
export interface Tracing {
  readonly enabled: boolean;
  startRequest(options: RequestSpanOptions): RequestSpan;
  /** A client span for one webhook request, a child of the call's stored context. */
  startAttempt(parent: TraceContext | undefined, name: string, attributes: SpanAttributes): AttemptSpan;
  /** Exports the spans ended so far (tests, and before stopping). */
  flush(): Promise<void>;
  /** Flushes and stops exporting, giving up after `timeoutMs`. */
  shutdown(timeoutMs: number): Promise<void>;
}

const noHeaders: Record<string, string> = {};
const noAttempt: AttemptSpan = { headers: noHeaders, end() {} };

/** Tracing off: contexts pass through unchanged, nothing else happens. */
export const tracingOff: Tracing = {
  enabled: false,
  startRequest: ({ incoming }) => ({ stored: incoming, set() {}, end() {} }),
  startAttempt: () => noAttempt,
  flush: async () => {},
  shutdown: async () => {},
};
