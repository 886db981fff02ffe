import { timingSafeEqual } from "node:crypto";
import * as client from "openid-client";
import type { AccessConfig } from "../access-config.js";
import { hashSessionId } from "../access/credentials.js";
import type { Clock } from "../clock.js";
import { insertSignInAttempt } from "../db/queries/access/sign-in-attempts.js";
import { revokeSession, touchSession } from "../db/queries/access/user-sessions.js";
import type { Queryable } from "../db/pool.js";
import { BodyRefusal } from "../http/request-body.js";
import type { Req, Res, RouteHandler } from "../http/types.js";
import { finishUnreadRequest } from "../http/unread-body.js";
import type { Logger } from "../logger.js";
import { confirmCliSignIn, pollCliSignIn, showCliConfirmation, startCliSignIn } from "./cli-sign-in.js";
import { createOidcClient, ProviderUnavailable } from "./oidc-client.js";
import { clearSessionCookie, sessionIdFromCookie } from "../access/session-cookie.js";
import { createSignInAudit } from "./sign-in-audit.js";
import { createSignInThrottle, type SignInThrottle } from "./sign-in-throttle.js";
import { handleCallback } from "./sign-in-callback.js";
import { attemptTtlMs, redirectUriOf, safeReturnTo, type SignInContext } from "./sign-in-context.js";
import {
  cookieSecure,
  escapeHtml,
  queryOf,
  redirect,
  refuseCrossSite,
  requestOrigin,
  SignInRefusal,
  sendJson,
  sendPage,
} from "./sign-in-request.js";

export interface SignInRoutesOptions {
  pool: Queryable;
  clock: Clock;
  logger: Pick<Logger, "info" | "warn">;
  /** config.access: the provider, the allowed lists, session and CLI token lifetimes, the throttle. */
  config: AccessConfig;
}

/** Answered as JSON (for the console and the CLI); the rest are pages a person sees. */
const jsonPaths = new Set(["/auth/session", "/auth/logout", "/auth/cli/start", "/auth/cli/poll"]);

/**
 * The sign-in routes under /auth/ (docs/access.md#signing-in-openid-connect):
 * login, the provider's callback, logout, the console's session, and
 * `waypost login`'s start and poll. Without WAYPOST_OIDC_ISSUER only
 * /auth/session (signed out) and /auth/logout answer; the rest say sign-in
 * is not configured. Throws a ConfigError for an issuer it will not use
 * (plain http off loopback): the server should not start with it.
 */
export function createSignInRoutes(options: SignInRoutesOptions): RouteHandler {
  const oidcConfig = options.config.oidc;
  const ctx: SignInContext = {
    pool: options.pool,
    clock: options.clock,
    logger: options.logger,
    access: options.config,
    oidc: oidcConfig ? { config: oidcConfig, client: createOidcClient(oidcConfig, options.logger) } : undefined,
    audit: createSignInAudit(options),
  };
  const throttle = createSignInThrottle({ pool: options.pool, clock: options.clock, ...options.config.signInThrottle });
  return async (req, res, path) => {
    if (!path.startsWith("/auth/")) return false;
    try {
      await route(ctx, throttle, req, res, path);
    } catch (error) {
      const refusal = asRefusal(error);
      if (!refusal) throw error;
      if (res.headersSent) return true;
      if (jsonPaths.has(path)) sendJson(res, refusal.status, { error: refusal.message });
      else sendPage(res, refusal.status, "Sign-in failed", `<p>${escapeHtml(refusal.message)}.</p>`);
      finishUnreadRequest(req, res, 16 * 1024);
    }
    return true;
  };
}

/** What a route may throw, as the answer it gets; anything else is the route table's 500. */
function asRefusal(error: unknown): SignInRefusal | undefined {
  if (error instanceof SignInRefusal) return error;
  if (error instanceof BodyRefusal) return new SignInRefusal(error.status, error.message);
  if (error instanceof ProviderUnavailable) return new SignInRefusal(502, `${error.message}: try again in a moment`);
  return undefined;
}

async function route(ctx: SignInContext, throttle: SignInThrottle, req: Req, res: Res, path: string): Promise<void> {
  const method = req.method ?? "GET";
  const allow = (...methods: string[]) => {
    if (!methods.includes(method)) throw new MethodRefusal(methods);
  };
  try {
    switch (path) {
      case "/auth/session":
        allow("GET", "HEAD");
        return await session(ctx, req, res);
      case "/auth/logout":
        allow("POST");
        return await logout(ctx, req, res);
    }
    if (!["/auth/login", "/auth/callback", "/auth/cli/start", "/auth/cli/poll"].includes(path)) {
      throw new SignInRefusal(404, `no route for ${method.slice(0, 10)} ${path.slice(0, 100)}`);
    }
    if (!ctx.oidc) throw new SignInRefusal(404, "sign-in is not configured (WAYPOST_OIDC_ISSUER)");
    // Polls create nothing and come once a second from a waiting CLI: not counted.
    if (path !== "/auth/cli/poll") throttle.take(req);
    if ((path === "/auth/login" && method === "GET") || path === "/auth/cli/start") await throttle.roomForAnother();
    switch (path) {
      case "/auth/login":
        allow("GET", "POST");
        return method === "POST" ? await confirmCliSignIn(ctx, req, res) : await login(ctx, req, res);
      case "/auth/callback":
        allow("GET");
        return await handleCallback(ctx, req, res);
      case "/auth/cli/start":
        allow("POST");
        return await startCliSignIn(ctx, req, res);
      case "/auth/cli/poll":
        allow("POST");
        return await pollCliSignIn(ctx, req, res);
    }
  } catch (error) {
    if (!(error instanceof MethodRefusal)) throw error;
    const message = `${method.slice(0, 10)} is not allowed on ${path}: use ${error.methods.join(" or ")}`;
    if (jsonPaths.has(path)) sendJson(res, 405, { error: message }, { allow: error.methods.join(", ") });
    else sendPage(res, 405, "Not allowed", `<p>${escapeHtml(message)}.</p>`, { allow: error.methods.join(", ") });
    finishUnreadRequest(req, res, 16 * 1024);
  }
}

class MethodRefusal extends Error {
  constructor(readonly methods: string[]) {
    super("method not allowed");
  }
}

/** GET /auth/login?return_to=/console/...: a new attempt, and off to the provider. */
async function login(ctx: SignInContext, req: Req, res: Res): Promise<void> {
  const query = queryOf(req);
  const cli = query.get("cli");
  if (cli !== null) return showCliConfirmation(ctx, res, cli);
  const origin = requestOrigin(req, ctx.access.publicUrl);
  const state = client.randomState();
  const nonce = client.randomNonce();
  const codeVerifier = client.randomPKCECodeVerifier();
  // The provider's URL first: when it cannot be reached, no attempt is left behind.
  const url = await ctx.oidc!.client.authorizationUrl({ redirectUri: redirectUriOf(ctx.oidc!.config, origin), state, nonce, codeVerifier });
  const now = ctx.clock.now();
  await insertSignInAttempt(ctx.pool, {
    state,
    codeVerifier,
    nonce,
    returnTo: safeReturnTo(query.get("return_to")),
    cliPollHash: null,
    now,
    expiresAt: new Date(now.getTime() + attemptTtlMs),
  });
  redirect(res, 302, url.href);
}

/** The live session of the request's cookie, with its user. */
async function currentSession(ctx: SignInContext, req: Req) {
  const sessionId = sessionIdFromCookie(req.headers.cookie);
  if (!sessionId) return undefined;
  const now = ctx.clock.now();
  const found = await touchSession(ctx.pool, hashSessionId(sessionId), now, new Date(now.getTime() - ctx.access.sessions.idleMs));
  return found ? { sessionId, ...found } : undefined;
}

/** GET /auth/session: who the console is signed in as, and the CSRF token its changes carry. */
async function session(ctx: SignInContext, req: Req, res: Res): Promise<void> {
  refuseCrossSite(req, requestOrigin(req, ctx.access.publicUrl));
  const found = await currentSession(ctx, req);
  const oidc = ctx.oidc !== undefined;
  if (!found) {
    sendJson(res, 200, { signedIn: false, oidc });
    return;
  }
  const { user } = found;
  sendJson(res, 200, {
    signedIn: true,
    oidc,
    user: { id: user.id, email: user.email, name: user.name, role: user.role },
    csrfToken: found.csrf_token,
  });
}

/** POST /auth/logout with X-CSRF-Token: the session is revoked (in every process at once: it is a row) and the cookie cleared. */
async function logout(ctx: SignInContext, req: Req, res: Res): Promise<void> {
  const origin = requestOrigin(req, ctx.access.publicUrl);
  refuseCrossSite(req, origin);
  const clear = { "set-cookie": clearSessionCookie({ secure: cookieSecure(origin) }) };
  const found = await currentSession(ctx, req);
  if (!found) {
    sendJson(res, 200, { signedIn: false }, clear);
    return;
  }
  const given = Buffer.from(String(req.headers["x-csrf-token"] ?? ""));
  const expected = Buffer.from(found.csrf_token);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new SignInRefusal(403, "X-CSRF-Token header missing or wrong: send the csrfToken of /auth/session");
  }
  await revokeSession(ctx.pool, hashSessionId(found.sessionId), ctx.clock.now());
  await ctx.audit.record(req, { action: "session.sign_out", user: found.user, outcome: "ok", target: { kind: "user", id: found.user.id } });
  ctx.logger.info({ userId: found.user.id }, "signed out");
  sendJson(res, 200, { signedIn: false }, clear);
}
