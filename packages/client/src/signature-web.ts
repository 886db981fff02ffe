/**
 * Webhook signature verification with WebCrypto, for browsers, edge
 * runtimes (Cloudflare Workers, Deno) and Node alike. WebCrypto is
 * asynchronous, hence a Promise; in Node the synchronous
 * `verifyWebhookSignature` of `@waypost/client` does the same.
 */

/** HMAC-SHA1 is 20 bytes: exactly 40 hex digits. */
const signaturePattern = /^[0-9a-fA-F]{40}$/;

/** The signature's bytes, or undefined when it is not 40 hex digits. */
export function parseSignatureHex(signature: unknown): Uint8Array<ArrayBuffer> | undefined {
  if (typeof signature !== "string") return undefined;
  const hex = signature.trim();
  if (!signaturePattern.test(hex)) return undefined;
  const bytes = new Uint8Array(20);
  for (let i = 0; i < 20; i++) bytes[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

/**
 * Resolves true when `signature` (the `X-Signature` header) is the
 * HMAC-SHA1 of the raw body under `secret`. `crypto.subtle.verify` compares
 * in constant time.
 */
export async function verifyWebhookSignatureAsync(rawBody: string | Uint8Array, signature: string, secret: string): Promise<boolean> {
  const given = parseSignatureHex(signature);
  if (!given) return false;
  const subtle = globalThis.crypto?.subtle;
  if (!subtle) throw new Error("verifyWebhookSignatureAsync needs WebCrypto (crypto.subtle), which this runtime lacks");
  const encoder = new TextEncoder();
  const key = await subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-1" }, false, ["verify"]);
  // A copy, because WebCrypto does not take views of a SharedArrayBuffer.
  const body = typeof rawBody === "string" ? encoder.encode(rawBody) : new Uint8Array(rawBody);
  return subtle.verify("HMAC", key, given, body);
}
