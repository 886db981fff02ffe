import { createHmac, randomBytes } from "node:crypto";

/**
 * Standard Webhooks (standardwebhooks.com) signing: a timestamp against
 * replays and several secrets at once for rotation. Beside X-Signature,
 * which stays as it was.
 */

export const signingSecretPrefix = "whsec_";
export const minSecretBytes = 24;
export const maxSecretBytes = 64;

const base64Pattern = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Why a secret is not `whsec_` + base64 of 24 to 64 bytes, or undefined when it is. */
export function signingSecretProblem(secret: string): string | undefined {
  if (!secret.startsWith(signingSecretPrefix)) return `must start with "${signingSecretPrefix}"`;
  const encoded = secret.slice(signingSecretPrefix.length);
  if (!base64Pattern.test(encoded)) return `must be "${signingSecretPrefix}" followed by standard (padded) base64`;
  const bytes = Buffer.from(encoded, "base64").length;
  if (bytes < minSecretBytes || bytes > maxSecretBytes) {
    return `must encode ${minSecretBytes} to ${maxSecretBytes} bytes, got ${bytes}`;
  }
  return undefined;
}

/** The HMAC key of a valid secret. */
export function signingKey(secret: string): Buffer {
  return Buffer.from(secret.slice(signingSecretPrefix.length), "base64");
}

/** A new random secret (32 bytes, as Svix and the reference libraries make them). */
export function generateSigningSecret(): string {
  return signingSecretPrefix + randomBytes(32).toString("base64");
}

/** `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">` per key, space-separated. */
export function standardWebhookSignature(keys: readonly Buffer[], id: string, timestampSeconds: number, body: string): string {
  const content = `${id}.${timestampSeconds}.${body}`;
  return keys.map((key) => `v1,${createHmac("sha256", key).update(content, "utf8").digest("base64")}`).join(" ");
}

/** The three headers of one request: the timestamp is that of the attempt. */
export function standardWebhookHeaders(
  keys: readonly Buffer[],
  id: string,
  at: Date,
  body: string,
): { "webhook-id": string; "webhook-timestamp": string; "webhook-signature": string } {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": standardWebhookSignature(keys, id, timestamp, body),
  };
}

/** A destination's secret as stored: expiresAt is set on the previous one when it is rotated out. */
export interface StoredSigningSecret {
  secret: string;
  /** ISO time; null: signs until removed or rotated. */
  expiresAt: string | null;
}

/** The secrets that still sign at `now`. */
export function activeSigningSecrets(stored: readonly StoredSigningSecret[], now: Date): StoredSigningSecret[] {
  const at = now.getTime();
  return stored.filter((s) => s.expiresAt === null || Date.parse(s.expiresAt) > at);
}
