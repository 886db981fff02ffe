import { createHash } from "node:crypto";
import { type HookHeaders, hookHeader } from "./hook-headers.js";
import type { HookSettings } from "./hook-settings.js";

// What makes a resend of a webhook a no-op: a header, or a value in the body.

/** Longer keys are stored as their sha256 (so two long keys never collide by truncation). */
export const maxIdempotencyKeyLength = 200;

/** Each verifier's own delivery id, used when the source names no key. */
const defaultKeys: Partial<Record<HookSettings["verifier"], string>> = {
  standard_webhooks: "webhook-id",
  stripe: "$.id",
  github: "X-GitHub-Delivery",
  shopify: "X-Shopify-Webhook-Id",
};

/**
 * The request's idempotency key, or undefined when it has none: the
 * configured header or JSON path ("$.data.object.id"), else the verifier's
 * default (Standard Webhooks' webhook-id, Stripe's event id, GitHub's
 * X-GitHub-Delivery, Shopify's X-Shopify-Webhook-Id), else none. `bodyJson`
 * is the parsed body, undefined when it is not JSON.
 */
export function idempotencyKeyOf(settings: HookSettings, headers: HookHeaders, bodyJson: unknown): string | undefined {
  const source = settings.idempotencyKey || defaultKeys[settings.verifier];
  if (!source) return undefined;
  let key: string | undefined;
  if (source.startsWith("$.")) key = valueAt(bodyJson, source.slice(2).split("."));
  else {
    key = hookHeader(headers, source);
    // Svix sends the Standard Webhooks headers under its own name.
    if (key === undefined && source === "webhook-id") key = hookHeader(headers, "svix-id");
  }
  if (key === undefined || key === "") return undefined;
  return key.length > maxIdempotencyKeyLength ? `sha256:${createHash("sha256").update(key).digest("hex")}` : key;
}

/** A string or a number at `path` in `value`; anything else (an object, null, absent) is no key. */
function valueAt(value: unknown, path: readonly string[]): string | undefined {
  let current = value;
  for (const segment of path) {
    if (current === null || typeof current !== "object") return undefined;
    if (Array.isArray(current)) {
      if (!/^\d+$/.test(segment)) return undefined;
      current = current[Number(segment)];
    } else {
      if (!Object.hasOwn(current, segment)) return undefined;
      current = (current as Record<string, unknown>)[segment];
    }
  }
  if (typeof current === "string") return current;
  if (typeof current === "number" && Number.isFinite(current)) return String(current);
  return undefined;
}
