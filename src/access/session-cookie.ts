// The console's session cookie: `waypost_session`, holding a random id
// whose sha256 is the user_sessions row's key. Reading a Cookie header is
// bounded (it is whatever a client sends): only the first `maxCookieHeader`
// characters and `maxCookies` pairs are looked at, and a value that is not
// the shape of a session id is no session, never an error.

export const sessionCookieName = "waypost_session";

/** Browsers send at most about 4 KB a cookie; a header past this is cut, not parsed. */
const maxCookieHeader = 8192;
const maxCookies = 100;
/** 32 random bytes in base64url are 43 characters; a little room for other generators, none for garbage. */
const sessionIdPattern = /^[A-Za-z0-9_-]{32,128}$/;

/**
 * The cookies of a Cookie header, first value of a name winning (as
 * browsers order the most specific path first). Pairs without `=`, empty
 * names and values that are not valid percent-encoding are skipped.
 */
export function parseCookies(header: string | undefined): Map<string, string> {
  const cookies = new Map<string, string>();
  if (!header) return cookies;
  const pairs = header.slice(0, maxCookieHeader).split(";", maxCookies);
  for (const pair of pairs) {
    const at = pair.indexOf("=");
    if (at <= 0) continue;
    const name = pair.slice(0, at).trim();
    if (!name || cookies.has(name)) continue;
    let value = pair.slice(at + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    try {
      cookies.set(name, value.includes("%") ? decodeURIComponent(value) : value);
    } catch {
      // Not percent-encoding: not a value this side wrote.
    }
  }
  return cookies;
}

/** The session id of a request's Cookie header, or undefined when there is none of a session id's shape. */
export function sessionIdFromCookie(cookieHeader: string | undefined): string | undefined {
  const value = parseCookies(cookieHeader).get(sessionCookieName);
  return value !== undefined && sessionIdPattern.test(value) ? value : undefined;
}

export interface SessionCookieOptions {
  /** Off only for plain http on loopback, where a browser would refuse a Secure cookie. */
  secure: boolean;
  maxAgeSeconds: number;
}

/**
 * The Set-Cookie of a new session. HttpOnly: no script reads it (the
 * console reads its CSRF token from /auth/session instead). SameSite=Lax,
 * not Strict: the browser comes back from the identity provider by a
 * cross-site redirect, and a Strict cookie would be missing on that first
 * landing in the console; Lax still keeps it off cross-site subrequests and
 * POSTs, and every change also needs the X-CSRF-Token header.
 */
export function serializeSessionCookie(sessionId: string, options: SessionCookieOptions): string {
  return [
    `${sessionCookieName}=${sessionId}`,
    "Path=/",
    `Max-Age=${Math.max(0, Math.floor(options.maxAgeSeconds))}`,
    "HttpOnly",
    "SameSite=Lax",
    ...(options.secure ? ["Secure"] : []),
  ].join("; ");
}

/** The Set-Cookie that removes the session cookie. */
export function clearSessionCookie(options: { secure: boolean }): string {
  return serializeSessionCookie("", { secure: options.secure, maxAgeSeconds: 0 });
}
