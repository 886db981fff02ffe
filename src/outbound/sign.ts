import { createHmac } from "node:crypto";

/** X-Signature: lowercase hex HMAC-SHA1 of exactly the body bytes sent. */
export function signPayload(secret: string, body: string): string {
  return createHmac("sha1", secret).update(body, "utf8").digest("hex");
}
