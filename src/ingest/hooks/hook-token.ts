import { createHash, randomBytes } from "node:crypto";

// The token in a webhook source's inbound URL (POST /hooks/<token>): the only
// thing a sender of verifier NONE holds, so as strong as a write key. Waypost
// keeps its sha256, never the token.

/** 32 random bytes, base64url (43 characters, safe in a URL path). */
export function newHookToken(): string {
  return randomBytes(32).toString("base64url");
}

/** What sources.hook_token_hash holds for `token`. */
export function hashHookToken(token: string): Buffer {
  return createHash("sha256").update(token).digest();
}
