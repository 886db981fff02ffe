import { randomUUID } from "node:crypto";
import type { BodyTiming } from "../http/request-body.js";
import type { Req, Res, RouteHandler } from "../http/types.js";
import { closeUnreadRequest, finishUnreadRequest } from "../http/unread-body.js";
import { preferencesOf } from "../routing/consent.js";
import { requestOrigin } from "./analytics-settings.js";
import { ClientGoneError, CompatError, sendCompat, sendCompatError, toCompatError } from "./errors.js";
import { closesConnection, maxDiscardBytes, readBody } from "./read-body.js";

/**
 * The first-party anonymous-id cookie (docs/first-party-collection.md). A
 * page posts to it once per load; when the call's consent allows it, the
 * answer sets `ajs_anonymous_id` as an HttpOnly cookie of Waypost's host
 * (under the site's own domain, so first-party) that lives a year, and the
 * page hands the id it answers to analytics.js. Set by a server, the cookie
 * outlives the 7 days browsers give cookies that scripts write.
 */

export const anonymousIdCookiePath = "/v1/first-party/anonymous-id";
export const cookieName = "ajs_anonymous_id";
/** A year: the cookie is renewed on every visit that consents. */
export const cookieMaxAgeSeconds = 365 * 24 * 60 * 60;
/** A consent request is small: an id and a few category names. */
const maxBodyBytes = 4 * 1024;
/** What an id may be: analytics.js makes UUIDs; anything else is replaced. */
const validId = /^[A-Za-z0-9_.:-]{1,100}$/;
/** The category a cookie needs unless the call names others. */
const defaultCategories = ["Analytics"];

interface ConsentRequest {
  anonymousId: string | undefined;
  categories: string[];
  preferences: Record<string, unknown> | undefined;
}

export interface AnonymousIdCookieOptions {
  /** The deadline, piece count and minimum rate every request body is read within. */
  bodies: BodyTiming;
}

/** POST only; 400 naming the field for a body that is not the documented shape. */
export function createAnonymousIdCookieRoute(options: AnonymousIdCookieOptions): RouteHandler {
  return async (req, res, path) => {
    if (path !== anonymousIdCookiePath) return false;
    try {
      if (req.method !== "POST")
        throw new CompatError(405, "method_not_allowed", `${String(req.method).slice(0, 20)} is not allowed here: use POST`);
      const request = parseConsentRequest(await readBody(req, options.bodies, maxBodyBytes));
      answer(req, res, request);
    } catch (error) {
      if (error instanceof ClientGoneError) return true;
      const known = toCompatError(error);
      if (!known) throw error;
      sendCompatError(res, known);
      // Too slow or in too many pieces: reading on is the cost refused, so the connection goes.
      if (closesConnection(known)) closeUnreadRequest(req, res);
      else finishUnreadRequest(req, res, maxDiscardBytes);
    }
    return true;
  };
}

function answer(req: Req, res: Res, request: ConsentRequest): void {
  const existing = cookieValue(req.headers.cookie);
  const allowed = request.preferences !== undefined && request.categories.every((name) => request.preferences![name] === true);
  // Without consent the cookie's id is neither read nor answered: the page keeps its own.
  const anonymousId = (allowed ? existing : undefined) ?? request.anonymousId ?? randomUUID();
  // Consent withdrawn (given as an object that says no): the cookie goes.
  const withdraw = !allowed && request.preferences !== undefined && existing !== undefined;
  const secure = requestOrigin(req)?.protocol === "https" ? "; Secure" : "";
  if (allowed)
    res.setHeader("set-cookie", `${cookieName}=${anonymousId}; Max-Age=${cookieMaxAgeSeconds}; Path=/; HttpOnly; SameSite=Lax${secure}`);
  if (withdraw) res.setHeader("set-cookie", `${cookieName}=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax${secure}`);
  allowCredentials(req, res);
  sendCompat(res, 200, { anonymousId, cookie: allowed }, { "cache-control": "no-store" });
}

/**
 * The page reads the answer with its cookies sent (`credentials: "include"`),
 * which browsers allow only when the answer names the origin, never `*`.
 * The origin is named only when src/http/cors.ts allowed it.
 */
function allowCredentials(req: Req, res: Res): void {
  const origin = req.headers.origin;
  if (typeof origin !== "string" || res.getHeader("access-control-allow-origin") === undefined) return;
  res.setHeader("access-control-allow-origin", origin);
  res.setHeader("access-control-allow-credentials", "true");
  res.setHeader("vary", "Origin");
}

/** The cookie's value when the request carries a valid one. */
function cookieValue(header: string | undefined): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const [name, ...rest] = part.trim().split("=");
    const value = rest.join("=");
    if (name === cookieName && validId.test(value)) return value;
  }
  return undefined;
}

/**
 * `{ "anonymousId"?, "consentCategories"?, "context": { "consent": {
 * "categoryPreferences": {...} } } }`: the consent object of any call, and
 * which of its categories the cookie needs (default `Analytics`).
 */
export function parseConsentRequest(body: Buffer): ConsentRequest {
  let json: unknown;
  try {
    json = JSON.parse(body.toString("utf8") || "{}");
  } catch {
    throw new CompatError(400, "invalid_json", "the body is not valid JSON");
  }
  if (typeof json !== "object" || json === null || Array.isArray(json))
    throw new CompatError(400, "invalid_request", "the body must be a JSON object");
  const given = json as Record<string, unknown>;
  const id = given.anonymousId;
  if (id !== undefined && (typeof id !== "string" || !validId.test(id))) {
    throw new CompatError(400, "invalid_request", "anonymousId must be 1 to 100 letters, digits or _.:-");
  }
  const categories = given.consentCategories ?? defaultCategories;
  if (
    !Array.isArray(categories) ||
    categories.length === 0 ||
    categories.length > 20 ||
    !categories.every((c) => typeof c === "string" && c !== "" && c.length <= 100)
  ) {
    throw new CompatError(400, "invalid_request", "consentCategories must be 1 to 20 category names of 1 to 100 characters");
  }
  return { anonymousId: id, categories: categories as string[], preferences: preferencesOf(given) };
}
