import type { Webhook } from "../../gen/waypost/v1/destination_pb.js";
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
]);

const headerNamePattern = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

export interface StoredWebhook {
  url: string;
  headers: Record<string, string>;
}

export function validateName(field: string, name: string): string {
  const trimmed = name.trim();
  if (trimmed === "") throw invalidArgument(field, "is required");
  if (trimmed.length > destinationLimits.maxNameLength) {
    throw invalidArgument(field, `is longer than ${destinationLimits.maxNameLength} characters`);
  }
  return trimmed;
}

/** 1 to 5 webhooks, each an absolute http(s) URL with at most 5 allowed headers. */
export function validateWebhooks(field: string, webhooks: readonly Webhook[]): StoredWebhook[] {
  if (webhooks.length === 0) throw invalidArgument(field, "at least one webhook is required");
  if (webhooks.length > destinationLimits.maxWebhooks) {
    throw invalidArgument(field, `at most ${destinationLimits.maxWebhooks} webhooks are allowed, got ${webhooks.length}`);
  }
  return webhooks.map((webhook, i) => ({
    url: validateUrl(`${field}[${i}].url`, webhook.url),
    headers: validateHeaders(`${field}[${i}].headers`, webhook.headers),
  }));
}

function validateUrl(field: string, raw: string): string {
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
  return url.href;
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
    if (reservedHeaders.has(lower) || lower.startsWith("webhook-")) throw invalidArgument(`${field}.${name}`, "is set by Waypost and cannot be configured");
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
  return secret === "" ? null : secret;
}
