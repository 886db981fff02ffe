import { randomUUID } from "node:crypto";
import { BodyRefusal, defaultBodyTiming, readRequestBody } from "../http/request-body.js";
import type { Req, Res } from "../http/types.js";
import { finishUnreadRequest } from "../http/unread-body.js";
import { isLoopbackHost } from "./oidc-client.js";

// What the sign-in routes read of a request (its origin, whether it is
// cross-site, its query, a small JSON body) and how they answer (JSON or a
// short HTML page, never cached).

/** A request refused with a status and a message naming what is wrong. */
export class SignInRefusal extends Error {
  override name = "SignInRefusal";
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The JSON bodies of /auth/cli/*: a few short strings. */
const maxJsonBodyBytes = 4096;
const hostPattern = /^[A-Za-z0-9.-]{1,253}(:\d{1,5})?$|^\[[0-9A-Fa-f:.]{2,45}\](:\d{1,5})?$/;

/**
 * This Waypost's origin as the browser sees it: WAYPOST_PUBLIC_URL's, else
 * the request's own (its Host, https when the connection is TLS). Behind a
 * proxy that ends TLS, only WAYPOST_PUBLIC_URL can tell it is https.
 */
export function requestOrigin(req: Req, publicUrl: string | undefined): URL {
  if (publicUrl) return new URL(new URL(publicUrl).origin);
  const host = String(req.headers.host ?? req.headers[":authority"] ?? "");
  if (!hostPattern.test(host)) throw new SignInRefusal(400, "the request has no valid Host header");
  const encrypted = "encrypted" in req.socket && req.socket.encrypted === true;
  return new URL(`${encrypted ? "https" : "http"}://${host}`);
}

/** Cookies lose Secure only for plain http on loopback, where a browser would refuse a Secure one. */
export function cookieSecure(origin: URL): boolean {
  return !(origin.protocol === "http:" && isLoopbackHost(origin.hostname));
}

/**
 * Refuses a request a page of another site made (403): the browser says
 * so in Sec-Fetch-Site, or sends an Origin that is not this Waypost's. A
 * request with neither (curl, the CLI, an old browser's same-origin GET)
 * passes: what keeps another site out then is that it cannot read the
 * answer (no CORS) or send the cookie with a POST (SameSite=Lax).
 */
export function refuseCrossSite(req: Req, origin: URL): void {
  const site = String(req.headers["sec-fetch-site"] ?? "");
  if (site === "cross-site") throw new SignInRefusal(403, "cross-site request refused (Sec-Fetch-Site: cross-site)");
  const from = req.headers.origin;
  if (from !== undefined && from !== origin.origin) {
    throw new SignInRefusal(403, `cross-site request refused: Origin ${String(from).slice(0, 100)} is not ${origin.origin}`);
  }
}

/** The query of a request's URL. */
export function queryOf(req: Req): URLSearchParams {
  const url = req.url ?? "";
  const at = url.indexOf("?");
  return new URLSearchParams(at < 0 ? "" : url.slice(at + 1, at + 1 + 8192));
}

/** The request's X-Request-Id when it is a sane token, else a new one: the audit row's request_id. */
export function requestIdOf(req: Req): string {
  const given = req.headers["x-request-id"];
  return typeof given === "string" && /^[A-Za-z0-9._:-]{1,128}$/.test(given) ? given : randomUUID();
}

export function clientAddressOf(req: Req): string {
  return req.socket.remoteAddress ?? "";
}

export function userAgentOf(req: Req): string {
  return String(req.headers["user-agent"] ?? "").slice(0, 512);
}

/** A JSON object body of at most a few KB (413 past it, 400 naming what is wrong with it). */
export async function readJsonObject(req: Req, res: Res): Promise<Record<string, unknown>> {
  const type = String(req.headers["content-type"] ?? "");
  if (type && !/^application\/json\s*(;|$)/i.test(type)) {
    finishUnreadRequest(req, res, maxJsonBodyBytes);
    throw new SignInRefusal(415, `Content-Type ${type.slice(0, 60)} is not JSON: send application/json`);
  }
  let body: Buffer;
  try {
    body = await readRequestBody(req, { ...defaultBodyTiming, maxBytes: maxJsonBodyBytes });
  } catch (error) {
    if (error instanceof BodyRefusal) {
      finishUnreadRequest(req, res, maxJsonBodyBytes);
      throw new SignInRefusal(error.status, error.message);
    }
    throw error;
  }
  if (body.length === 0) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch (error) {
    throw new SignInRefusal(400, `the body is not JSON: ${error instanceof Error ? error.message.slice(0, 120) : "parse error"}`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
    throw new SignInRefusal(400, "the body must be a JSON object");
  return parsed as Record<string, unknown>;
}

const noStore = { "cache-control": "no-store" };

export function sendJson(res: Res, status: number, body: unknown, headers: Record<string, string | string[]> = {}): void {
  const bytes = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { ...noStore, ...headers, "content-type": "application/json", "content-length": String(bytes.length) });
  res.end(bytes);
}

export function redirect(res: Res, status: 302 | 303, location: string, headers: Record<string, string | string[]> = {}): void {
  res.writeHead(status, { ...noStore, ...headers, location, "content-length": "0" });
  res.end();
}

const escapes: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (char) => escapes[char]!);

/**
 * A short page for a person in a browser: what happened and what to do.
 * `body` is HTML the caller built with escapeHtml. No script, no outside
 * resource, and a CSP that allows none, so a reason echoing the provider's
 * words cannot run anything.
 */
export function sendPage(res: Res, status: number, title: string, body: string, headers: Record<string, string | string[]> = {}): void {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>${escapeHtml(title)} · Waypost</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#222}h1{font-size:1.4rem}code{background:#eee;padding:0 .2em}</style>
</head><body><h1>${escapeHtml(title)}</h1>
${body}
</body></html>
`;
  const bytes = Buffer.from(html);
  res.writeHead(status, {
    ...noStore,
    ...headers,
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "content-length": String(bytes.length),
  });
  res.end(bytes);
}
