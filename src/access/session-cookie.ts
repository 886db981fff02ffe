// The console session's cookie: its name, and reading it from a Cookie
// header. The value is a random id; Postgres keeps only its sha256.

export const sessionCookieName = "waypost_session";

/** The most of a Cookie header looked at: a hostile header costs no more. */
const maxCookieHeader = 8 * 1024;

/** The session id in a Cookie header, or undefined (absent, malformed, or absurdly long). */
export function sessionIdFromCookie(header: string | undefined): string | undefined {
  if (!header || header.length > maxCookieHeader) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0 || part.slice(0, eq).trim() !== sessionCookieName) continue;
    const value = part.slice(eq + 1).trim();
    return /^[A-Za-z0-9_-]{16,128}$/.test(value) ? value : undefined;
  }
  return undefined;
}
