/**
 * W3C trace context (https://www.w3.org/TR/trace-context/) as it travels
 * with a call: the `traceparent` and `tracestate` header values, stored on
 * the call's row and sent on every webhook request for it.
 */
export interface TraceContext {
  traceparent: string;
  /** Absent when the request had none, or one this reader refused. */
  tracestate?: string | undefined;
}

/** A parsed traceparent: the ids a span context is made of. */
export interface ParsedTraceparent {
  version: string;
  traceId: string;
  parentId: string;
  /** The trace-flags byte (bit 0: sampled). */
  flags: number;
}

// A version-00 traceparent is exactly 55 characters; later versions may
// append fields after a dash. Past these bounds a header is not read at all,
// so a hostile value costs nothing but its length check.
const maxTraceparentLength = 256;
const maxTracestateLength = 512;
const traceparentPattern = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const zeroTraceId = "0".repeat(32);
const zeroParentId = "0".repeat(16);
// Printable ASCII only: list members are key=value pairs of it.
const tracestatePattern = /^[\x20-\x7e]*$/;

/** The parts of a valid traceparent; undefined for anything the W3C format refuses. */
export function parseTraceparent(value: string | null | undefined): ParsedTraceparent | undefined {
  if (typeof value !== "string" || value.length < 55 || value.length > maxTraceparentLength) return undefined;
  const match = traceparentPattern.exec(value);
  if (!match) return undefined;
  const [, version, traceId, parentId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  if (version === "ff") return undefined;
  // Version 00 has exactly four fields; only a later version may carry more.
  if (version === "00" && rest !== undefined) return undefined;
  if (traceId === zeroTraceId || parentId === zeroParentId) return undefined;
  return { version, traceId, parentId, flags: Number.parseInt(flags, 16) };
}

/**
 * The trace context of a request's headers, or undefined when it has no
 * valid traceparent. A malformed traceparent is ignored (never an error);
 * a tracestate is kept only beside a valid traceparent, and only when it
 * is printable ASCII within 512 characters.
 */
export function readTraceContext(traceparent: string | null | undefined, tracestate: string | null | undefined): TraceContext | undefined {
  if (!parseTraceparent(traceparent)) return undefined;
  const state = typeof tracestate === "string" ? tracestate.trim() : "";
  const keep = state.length > 0 && state.length <= maxTracestateLength && tracestatePattern.test(state);
  return keep ? { traceparent: traceparent!, tracestate: state } : { traceparent: traceparent! };
}

/** A header value as Node gives it (a string, several, or none) as one string or undefined. */
export function headerText(value: string | string[] | undefined): string | undefined {
  if (typeof value === "string") return value;
  // Several tracestate headers are one list; several traceparents are invalid (and fail parsing joined).
  return Array.isArray(value) ? value.join(",") : undefined;
}

/** The version-00 traceparent of a span context. */
export function formatTraceparent(traceId: string, spanId: string, flags: number): string {
  return `00-${traceId}-${spanId}-${(flags & 0xff).toString(16).padStart(2, "0")}`;
}

/** The headers that carry a trace context on a request. */
export function traceHeaders(context: TraceContext): Record<string, string> {
  return context.tracestate ? { traceparent: context.traceparent, tracestate: context.tracestate } : { traceparent: context.traceparent };
}
