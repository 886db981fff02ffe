import { createHash, randomBytes } from "node:crypto";
import type { AccessConfig, OidcConfig } from "../access-config.js";
import type { Clock } from "../clock.js";
import type { Queryable } from "../db/pool.js";
import type { Logger } from "../logger.js";
import type { OidcClient } from "./oidc-client.js";
import type { SignInAudit } from "./sign-in-audit.js";

// What every part of sign-in is given: the routes build it once.

export interface SignInContext {
  pool: Queryable;
  clock: Clock;
  logger: Pick<Logger, "info" | "warn">;
  access: AccessConfig;
  /** Present when WAYPOST_OIDC_ISSUER is set. */
  oidc: { config: OidcConfig; client: OidcClient } | undefined;
  audit: SignInAudit;
}

/** How long a sign-in may take between /auth/login (or `waypost login`) and the provider's callback. */
export const attemptTtlMs = 10 * 60_000;

/** A random secret of 32 bytes, base64url: session ids, CSRF tokens, poll secrets. */
export const randomSecret = () => randomBytes(32).toString("base64url");

export const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest();

/** The state, verifier and nonce openid-client makes are base64url of 32 bytes; a callback's state must look like one. */
export const statePattern = /^[A-Za-z0-9_-]{16,128}$/;

/** Where the provider sends the browser back: WAYPOST_OIDC_REDIRECT_URL, WAYPOST_PUBLIC_URL's /auth/callback, or this request's. */
export function redirectUriOf(oidc: OidcConfig, origin: URL): string {
  return oidc.redirectUrl ?? new URL("/auth/callback", origin).href;
}

/** Only paths of the console, on this origin: /auth/login is no open redirect. */
export function safeReturnTo(raw: string | null): string {
  const fallback = "/console/";
  if (!raw || raw.length > 1024 || !raw.startsWith("/") || raw.startsWith("//") || /[\\\s]/.test(raw)) return fallback;
  if ([...raw].some((char) => char.charCodeAt(0) < 0x20 || char.charCodeAt(0) === 0x7f)) return fallback;
  let url: URL;
  try {
    url = new URL(raw, "http://waypost.invalid");
  } catch {
    return fallback;
  }
  if (url.origin !== "http://waypost.invalid" || !url.pathname.startsWith("/console/")) return fallback;
  return `${url.pathname}${url.search}${url.hash}`;
}

/** The short code a CLI sign-in's page shows and `waypost login` prints, so the person can match the two. */
export function cliCodeOf(state: string): string {
  const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
  const digest = sha256(state);
  let code = "";
  for (let i = 0; i < 8; i++) code += alphabet[digest[i]! % alphabet.length];
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}
