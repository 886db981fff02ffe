import { createHmac, timingSafeEqual } from "node:crypto";
import { parseSignatureHex } from "./signature-web.js";

/**
 * Checks a webhook's `X-Signature` header: lowercase hex of
 * HMAC-SHA1(shared secret, body bytes), as Waypost signs.
 * Pass the raw body as received (a string is taken as its UTF-8 bytes);
 * `JSON.stringify(JSON.parse(body))` gives the same bytes, because Waypost
 * signs exactly what `JSON.stringify` writes.
 *
 * The comparison takes the same time wherever the first difference is, so
 * that timing does not let an attacker guess a valid signature byte by byte.
 * Node only (synchronous); `verifyWebhookSignatureAsync` works everywhere.
 *
 * @example
 * const ok = verifyWebhookSignature(rawBody, req.headers["x-signature"] ?? "", process.env.WEBHOOK_SECRET!);
 */
export function verifyWebhookSignature(rawBody: string | Uint8Array, signature: string, secret: string): boolean {
  const given = parseSignatureHex(signature);
  if (!given) return false;
  const expected = createHmac("sha1", secret).update(rawBody).digest();
  return timingSafeEqual(expected, given);
}
