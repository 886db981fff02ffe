import { createHash } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { headerText, readTraceContext } from "../../tracing/trace-context.js";
import { defaultHookResponse, type HookSettings } from "./hook-settings.js";

/**
 * The stored settings (sources.webhook) with every field present: a field
 * the row lacks takes its documented default, so an older row or a partial
 * one never makes the inbound URL fail.
 */
export function hookSettingsOf(stored: Record<string, unknown>): HookSettings {
  const s = stored as Partial<HookSettings>;
  const response = s.response as Partial<HookSettings["response"]> | undefined;
  const status =
    response && Number.isInteger(response.status) && response.status! >= 200 && response.status! <= 299 ? response.status! : 200;
  return {
    verifier: s.verifier ?? "none",
    secret: s.secret ?? "",
    transform: s.transform ?? "",
    idempotencyKey: s.idempotencyKey ?? "",
    // No response configured: the default; one configured: as given (an empty body is allowed, e.g. 204).
    response: response
      ? {
          status,
          contentType: response.contentType || defaultHookResponse.contentType,
          body: typeof response.body === "string" ? response.body : "",
        }
      : { ...defaultHookResponse },
    ...(s.hmac ? { hmac: s.hmac } : {}),
    tokenHeader: s.tokenHeader ?? "",
    maxRequestsPerSecond: typeof s.maxRequestsPerSecond === "number" ? s.maxRequestsPerSecond : 0,
  };
}

/** sha256 of the token as it appears in the URL: what sources.hook_token_hash holds. */
export function hashHookToken(token: string): Buffer {
  return createHash("sha256").update(token, "utf8").digest();
}

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
 * it), else undefined. JSON.parse of at most 512 KB is bounded work.
 */
export function jsonOf(body: Buffer): unknown {
  const first = body.find((byte) => byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09);
  if (first !== 0x7b && first !== 0x5b) return undefined;
  try {
    return JSON.parse(body.toString("utf8"));
  } catch {
    return undefined;
  }
}

/** Longest idempotency key stored as is; a longer one is stored as its hash (the index has a row size limit). */
export const maxIdempotencyKeyLength = 255;

export function boundedKey(key: string | undefined): string | undefined {
  if (key === undefined || key === "") return undefined;
  if (key.length <= maxIdempotencyKeyLength) return key;
  return `sha256:${createHash("sha256").update(key, "utf8").digest("hex")}`;
}
