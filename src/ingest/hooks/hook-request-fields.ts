import type { IncomingHttpHeaders } from "node:http";
import { headerText, readTraceContext } from "../../tracing/trace-context.js";
import { decodeFormBody, isFormEncoded } from "./form-body.js";
import type { HookSettings } from "./hook-settings.js";

/** Headers never stored: credentials and what proxies add about the sender. */
const droppedHeaders = new Set(["cookie", "authorization", "proxy-authorization", "forwarded"]);

/**
 * The headers kept with a request: all as received (names lower case),
 * minus credentials (Cookie, Authorization, Proxy-Authorization), what
 * proxies add (Forwarded, X-Forwarded-*), HTTP/2 pseudo-headers, and the
 * header that carries a TOKEN verifier's secret when the source names one.
 */
export function headersToStore(headers: IncomingHttpHeaders, settings: HookSettings): Record<string, string | string[]> {
  const tokenHeader = settings.verifier === "token" ? settings.tokenHeader.toLowerCase() : "";
  const kept: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name.startsWith(":")) continue;
    if (droppedHeaders.has(name) || name.startsWith("x-forwarded-") || name === tokenHeader) continue;
    kept[name] = value;
  }
  return kept;
}

/** The request's W3C trace context, kept only when valid. */
export function traceContextOf(headers: IncomingHttpHeaders): { traceparent?: string; tracestate?: string } {
  return readTraceContext(headerText(headers.traceparent), headerText(headers.tracestate)) ?? {};
}

/**
 * The body as JSON when it parses (the idempotency key may be a path into
 * it), or a form body decoded as processing reads it; else undefined.
 * JSON.parse of at most 512 KB is bounded work.
 */
export function jsonOf(body: Buffer, contentType?: string): unknown {
  const first = body.find((byte) => byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09);
  if (first !== 0x7b && first !== 0x5b) return isFormEncoded(contentType) ? decodeFormBody(body.toString("utf8"))?.value : undefined;
  try {
    return JSON.parse(body.toString("utf8"));
  } catch {
    return undefined;
  }
}
