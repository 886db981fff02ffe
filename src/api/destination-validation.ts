import type { Webhook } from "../../gen/waypost/v1/destination_pb.js";
import { isIP } from "node:net";
import type { AddressGuard } from "../outbound/address-guard.js";
import { invalidArgument, requireUuid } from "./errors.js";

export const destinationLimits = {
  maxWebhooks: 5,
  maxHeaders: 5,
  maxUrlLength: 2048,
  maxHeaderValueLength: 4096,
  maxSecretLength: 1024,
  maxNameLength: 200,
  maxSources: 1000,
} as const;

/**
 * Headers Waypost sets itself or that belong to the connection. Names
 * starting with "webhook-" are reserved too (Standard Webhooks signing).
 */
export const reservedHeaders = new Set([
  "user-agent",
  "content-type",
  "x-signature",
  "content-length",
  "host",
  "transfer-encoding",
  "connection",
  // The call's trace context (docs/tracing.md).
  "traceparent",
  "tracestate",
]);

const headerNamePattern = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

export interface StoredWebhook {
  url: string;
  headers: Record<string, string>;
}

/**
 * A display name (of a source, destination or audience): trimmed, 1 to 200
 * characters, storable as Postgres text (no NUL, no lone surrogate).
 */
export function validateName(field: string, name: string): string {
  const trimmed = name.trim();
  if (trimmed === "") throw invalidArgument(field, "is required");
  if (trimmed.length > destinationLimits.maxNameLength) {
    throw invalidArgument(field, `is longer than ${destinationLimits.maxNameLength} characters`);
  }
  requireStorableText(field, trimmed);
  return trimmed;
}

// With the u flag a surrogate pair is one code point, so this matches unpaired halves only.
const loneSurrogate = /\p{Cs}/u;

/** Postgres text holds neither NUL nor, once encoded as UTF-8, a lone UTF-16 surrogate. */
export function requireStorableText(field: string, value: string): void {
  if (value.includes("\0")) throw invalidArgument(field, "must not contain NUL characters");
  if (loneSurrogate.test(value)) throw invalidArgument(field, "must not contain unpaired UTF-16 surrogates");
}

/** 1 to 5 webhooks, each an absolute http(s) URL with at most 5 allowed headers. */
export function validateWebhooks(field: string, webhooks: readonly Webhook[], guard: AddressGuard): StoredWebhook[] {
  if (webhooks.length === 0) throw invalidArgument(field, "at least one webhook is required");
  if (webhooks.length > destinationLimits.maxWebhooks) {
    throw invalidArgument(field, `at most ${destinationLimits.maxWebhooks} webhooks are allowed, got ${webhooks.length}`);
  }
  return webhooks.map((webhook, i) => ({
    url: validateUrl(`${field}[${i}].url`, webhook.url, guard),
    headers: validateHeaders(`${field}[${i}].headers`, webhook.headers),
  }));
}

function validateUrl(field: string, raw: string, guard: AddressGuard): string {
  if (raw === "") throw invalidArgument(field, "is required");
  if (raw.length > destinationLimits.maxUrlLength) {
    throw invalidArgument(field, `is longer than ${destinationLimits.maxUrlLength} characters`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidArgument(field, `${JSON.stringify(raw)} is not an absolute URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw invalidArgument(field, `must use http or https, got ${JSON.stringify(url.protocol.replace(/:$/, ""))}`);
  }
  if (url.hostname === "") throw invalidArgument(field, "has no host");
  // Credentials in a URL would be stored, shown by GetDestination and logged
  // with attempts; a header (webhooks[].headers) keeps them write-only.
  if (url.username !== "" || url.password !== "") {
    throw invalidArgument(field, "must not contain a user name or password: send credentials in a webhook header");
  }
  const refused = refuseLiteralAddress(url.hostname, guard);
  if (refused) throw invalidArgument(field, refused);
  return url.href;
}

/**
 * A URL naming a loopback, private, link-local or metadata address (or
 * localhost) literally can only fail at delivery: say so when it is saved.
 * Host names are judged at delivery, on the addresses they resolve to.
 */
function refuseLiteralAddress(hostname: string, guard: AddressGuard): string | undefined {
  const host = hostname.startsWith("[") ? hostname.slice(1, -1) : hostname;
  const lower = host.toLowerCase().replace(/\.$/, "");
  if (lower === "localhost" || lower.endsWith(".localhost")) {
    return guard.refuse("127.0.0.1") && `host ${hostname} is loopback; allow it with WAYPOST_ALLOW_PRIVATE_DESTINATIONS`;
  }
  if (isIP(host) === 0) return undefined;
  return guard.refuse(host);
}

function validateHeaders(field: string, headers: Record<string, string>): Record<string, string> {
  const entries = Object.entries(headers);
  if (entries.length > destinationLimits.maxHeaders) {
    throw invalidArgument(field, `at most ${destinationLimits.maxHeaders} headers are allowed, got ${entries.length}`);
  }
  const seen = new Set<string>();
  for (const [name, value] of entries) {
    const lower = name.toLowerCase();
    if (!headerNamePattern.test(name)) throw invalidArgument(`${field}.${name}`, "is not a valid header name");
    if (reservedHeaders.has(lower) || lower.startsWith("webhook-"))
      throw invalidArgument(`${field}.${name}`, "is set by Waypost and cannot be configured");
    if (seen.has(lower)) throw invalidArgument(`${field}.${name}`, "is given twice");
    seen.add(lower);
    if (/[\r\n\0]/.test(value)) throw invalidArgument(`${field}.${name}`, "value must not contain CR, LF or NUL");
    if (value.length > destinationLimits.maxHeaderValueLength) {
      throw invalidArgument(`${field}.${name}`, `value is longer than ${destinationLimits.maxHeaderValueLength} characters`);
    }
  }
  return { ...headers };
}

export function validateSourceIds(field: string, ids: readonly string[]): string[] {
  if (ids.length > destinationLimits.maxSources) throw invalidArgument(field, `at most ${destinationLimits.maxSources} sources`);
  return [...new Set(ids.map((id, i) => requireUuid(`${field}[${i}]`, id)))];
}

export function validateSecret(field: string, secret: string): string | null {
  if (secret.length > destinationLimits.maxSecretLength) {
    throw invalidArgument(field, `is longer than ${destinationLimits.maxSecretLength} characters`);
  }
  requireStorableText(field, secret);
  return secret === "" ? null : secret;
}
