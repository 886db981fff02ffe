/**
 * Verification of Standard Webhooks signatures (https://www.standardwebhooks.com),
 * which a Waypost destination with signing secrets sends next to
 * `X-Signature`:
 *
 * - `webhook-id`: the message's id, the same on every retry (use it to
 *   drop duplicates);
 * - `webhook-timestamp`: Unix seconds when the request was sent;
 * - `webhook-signature`: space-separated `v1,<base64 HMAC-SHA256>` entries over
 *   `{id}.{timestamp}.{body}`, one per active secret (two while a secret is
 *   being rotated).
 *
 * WebCrypto only, so it runs in Node, browsers, workers and edge runtimes.
 */

/** Request headers as `fetch` gives them, or as Node's `req.headers`. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface StandardWebhookOptions {
  /**
   * The destination's signing secret (`whsec_` + base64), or several: a
   * request signed with any of them is accepted, so a receiver can hold the
   * old and the new secret while rotating.
   */
  secret: string | readonly string[];
  /** How far `webhook-timestamp` may be from now, either way. Default 5 minutes. */
  toleranceMs?: number;
  /** The current time in ms (tests). Default `Date.now`. */
  now?: () => number;
}

export type StandardWebhookVerdict =
  | { valid: true; id: string; timestamp: number }
  | {
      valid: false;
      /** Why: headers missing, timestamp out of tolerance, or no signature matched. */
      reason: "missing_headers" | "invalid_timestamp" | "timestamp_out_of_tolerance" | "no_matching_signature";
    };

export const defaultToleranceMs = 5 * 60_000;

/** A header may carry this many signature entries; more are ignored (bounded work). */
const maxSignatures = 16;

/** Bounded like the ids Waypost sends; a longer header is not one of ours. */
const maxIdLength = 256;

/**
 * Checks a Standard Webhooks request. Pass the raw body exactly as received.
 * Resolves `{ valid: true, id, timestamp }` when a `v1` signature matches one
 * of the secrets and the timestamp is within tolerance; otherwise
 * `{ valid: false, reason }`. Throws on a malformed secret (a configuration
 * mistake, not a bad request). Signatures are compared by
 * `crypto.subtle.verify`, in constant time.
 *
 * @example
 * const verdict = await verifyStandardWebhook(rawBody, req.headers, { secret: process.env.WEBHOOK_SECRET! });
 * if (!verdict.valid) return res.writeHead(401).end(verdict.reason);
 */
export async function verifyStandardWebhook(
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  options: StandardWebhookOptions,
): Promise<StandardWebhookVerdict> {
  const keys = (typeof options.secret === "string" ? [options.secret] : options.secret).map(secretBytes);
  if (keys.length === 0) throw new TypeError("verifyStandardWebhook needs at least one secret");
  const id = header(headers, "webhook-id");
  const timestampText = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  if (!id || !timestampText || !signatures || id.length > maxIdLength) return { valid: false, reason: "missing_headers" };
  if (!/^\d{1,12}$/.test(timestampText)) return { valid: false, reason: "invalid_timestamp" };
  const timestamp = Number(timestampText);
  const now = (options.now ?? Date.now)();
  if (Math.abs(now - timestamp * 1000) > (options.toleranceMs ?? defaultToleranceMs)) {
    return { valid: false, reason: "timestamp_out_of_tolerance" };
  }

  const given = signatures
    .split(" ")
    .slice(0, maxSignatures)
    .flatMap((entry) => {
      const [version, value] = entry.split(",", 2);
      const bytes = version === "v1" && value ? base64Bytes(value) : undefined;
      // HMAC-SHA256 is 32 bytes; anything else cannot match.
      return bytes?.length === 32 ? [bytes] : [];
    });
  if (given.length === 0) return { valid: false, reason: "no_matching_signature" };

  const subtle = globalThis.crypto?.subtle;
  if (!subtle) throw new Error("verifyStandardWebhook needs WebCrypto (crypto.subtle), which this runtime lacks");
  const encoder = new TextEncoder();
  const prefix = encoder.encode(`${id}.${timestampText}.`);
  const body = typeof rawBody === "string" ? encoder.encode(rawBody) : rawBody;
  const signed = new Uint8Array(prefix.length + body.length);
  signed.set(prefix);
  signed.set(body, prefix.length);
  for (const raw of keys) {
    const key = await subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
    for (const signature of given) {
      if (await subtle.verify("HMAC", key, signature, signed)) return { valid: true, id, timestamp };
    }
  }
  return { valid: false, reason: "no_matching_signature" };
}

/** The key bytes of `whsec_<base64>` (the prefix is optional, as in the reference library). */
function secretBytes(secret: string): Uint8Array<ArrayBuffer> {
  const encoded = secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret;
  const bytes = base64Bytes(encoded);
  if (!bytes || bytes.length === 0) throw new TypeError("a Standard Webhooks secret is whsec_ followed by base64");
  return bytes;
}

function base64Bytes(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return undefined;
  try {
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  } catch {
    return undefined;
  }
}

/** One header's value from either kind of headers object (first value when repeated). */
function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name)?.trim() || undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const value = record[name] ?? Object.entries(record).find(([key]) => key.toLowerCase() === name)?.[1];
  return (Array.isArray(value) ? value[0] : value)?.trim() || undefined;
}
