import * as client from "openid-client";
import { hashTokenSecret, newTokenSecret, tokenDisplayPrefix } from "../access/token-secret.js";
import { type ApiTokenRow, insertApiToken, selectApiTokenByHash } from "../db/queries/access/api-tokens.js";
import {
  collectCliSignIn,
  insertSignInAttempt,
  completeCliSignIn as leaveTokenForCli,
  selectPendingCliSignIn,
} from "../db/queries/access/sign-in-attempts.js";
import type { UserRow } from "../db/queries/access/users.js";
import { defaultBodyTiming, readRequestBody } from "../http/request-body.js";
import type { Req, Res } from "../http/types.js";
import { attemptTtlMs, cliCodeOf, randomSecret, redirectUriOf, type SignInContext, sha256, statePattern } from "./sign-in-context.js";
import {
  clientAddressOf,
  escapeHtml,
  readJsonObject,
  redirect,
  refuseCrossSite,
  requestOrigin,
  SignInRefusal,
  sendJson,
  sendPage,
  userAgentOf,
} from "./sign-in-request.js";

// `waypost login`: the CLI starts a sign-in (POST /auth/cli/start) and gets
// a URL for the person's browser and a poll secret. The browser goes
// through a confirmation page, the provider and the same callback as a
// console sign-in; the callback leaves an API token in the attempt, and
// the CLI collects it once (POST /auth/cli/poll) with the poll secret,
// which never leaves the terminal.
//
// The confirmation page is there because a login URL can be sent to
// someone else: whoever completes it signs the sender's CLI in as
// themselves. The page says so, shows the code the terminal shows, and
// goes on only by a same-origin POST, so a link or another site cannot
// complete it without the person pressing the button.

const pollSecretPattern = /^[A-Za-z0-9_-]{32,128}$/;

/** POST /auth/cli/start → { loginUrl, state, pollSecret, code, expiresInSeconds }. */
export async function startCliSignIn(ctx: SignInContext, req: Req, res: Res): Promise<void> {
  const origin = requestOrigin(req, ctx.access.publicUrl);
  refuseCrossSite(req, origin);
  await readJsonObject(req, res);
  const state = client.randomState();
  const pollSecret = randomSecret();
  const now = ctx.clock.now();
  await insertSignInAttempt(ctx.pool, {
    state,
    codeVerifier: client.randomPKCECodeVerifier(),
    nonce: client.randomNonce(),
    returnTo: "/console/",
    cliPollHash: sha256(pollSecret),
    now,
    expiresAt: new Date(now.getTime() + attemptTtlMs),
  });
  const loginUrl = new URL("/auth/login", origin);
  loginUrl.searchParams.set("cli", state);
  sendJson(res, 200, { loginUrl: loginUrl.href, state, pollSecret, code: cliCodeOf(state), expiresInSeconds: attemptTtlMs / 1000 });
}

/** GET /auth/login?cli=<state>: what is about to happen, and a button. */
export async function showCliConfirmation(ctx: SignInContext, res: Res, state: string): Promise<void> {
  const attempt = statePattern.test(state) ? await selectPendingCliSignIn(ctx.pool, state, ctx.clock.now()) : undefined;
  if (!attempt) {
    sendPage(res, 410, "Sign-in expired", "<p>This <code>waypost login</code> is unknown, expired or already used: run it again.</p>");
    return;
  }
  sendPage(
    res,
    200,
    "Sign in to the Waypost CLI",
    `<p>A <code>waypost login</code> asks to act as you: it will get an API token with your role.</p>
<p>Continue only if you ran it yourself just now, and your terminal shows the code <strong>${escapeHtml(cliCodeOf(state))}</strong>.</p>
<form method="post" action="/auth/login"><input type="hidden" name="cli" value="${escapeHtml(state)}"><button type="submit">Continue to sign in</button></form>`,
  );
}

/** POST /auth/login (cli=<state>): same-origin only; on to the provider with the attempt's challenge. */
export async function confirmCliSignIn(ctx: SignInContext, req: Req, res: Res): Promise<void> {
  const origin = requestOrigin(req, ctx.access.publicUrl);
  refuseCrossSite(req, origin);
  if (req.headers.origin === undefined) throw new SignInRefusal(403, "the confirmation must come from the sign-in page (no Origin header)");
  const body = await readRequestBody(req, { ...defaultBodyTiming, maxBytes: 1024 });
  const state = new URLSearchParams(body.toString("latin1")).get("cli") ?? "";
  const attempt = statePattern.test(state) ? await selectPendingCliSignIn(ctx.pool, state, ctx.clock.now()) : undefined;
  if (!attempt) throw new SignInRefusal(410, "this waypost login is unknown, expired or already used: run it again");
  const url = await ctx.oidc!.client.authorizationUrl({
    redirectUri: redirectUriOf(ctx.oidc!.config, origin),
    state: attempt.state,
    nonce: attempt.nonce,
    codeVerifier: attempt.code_verifier,
  });
  redirect(res, 303, url.href);
}

/** Called by the callback once the person is signed in: the token the CLI will collect. */
export async function issueCliToken(ctx: SignInContext, req: Req, user: UserRow, state: string): Promise<ApiTokenRow> {
  const secret = newTokenSecret();
  const now = ctx.clock.now();
  const device = userAgentOf(req).slice(0, 80) || clientAddressOf(req) || "unknown";
  const token = await insertApiToken(ctx.pool, {
    name: `waypost login (${device})`,
    secretHash: hashTokenSecret(secret),
    prefix: tokenDisplayPrefix(secret),
    role: user.role,
    scopes: [],
    sourceIds: user.source_ids,
    userId: user.id,
    createdBy: user.email,
    now,
    expiresAt: new Date(now.getTime() + ctx.access.cliTokenMs),
  });
  await leaveTokenForCli(ctx.pool, state, secret);
  return token;
}

/** POST /auth/cli/poll { state, pollSecret } → 200 { token, expiresAt } once, 202 { pending }, or 410. */
export async function pollCliSignIn(ctx: SignInContext, req: Req, res: Res): Promise<void> {
  const body = await readJsonObject(req, res);
  const { state, pollSecret } = body;
  if (typeof state !== "string" || !statePattern.test(state))
    throw new SignInRefusal(400, "state: the state /auth/cli/start returned is required");
  if (typeof pollSecret !== "string" || !pollSecretPattern.test(pollSecret)) {
    throw new SignInRefusal(400, "pollSecret: the poll secret /auth/cli/start returned is required");
  }
  const found = await collectCliSignIn(ctx.pool, state, sha256(pollSecret), ctx.clock.now());
  if (found === "pending") {
    sendJson(res, 202, { pending: true });
    return;
  }
  if (!found) {
    sendJson(res, 410, { error: "no such sign-in: it expired, was refused, or its token was collected already; run waypost login again" });
    return;
  }
  const row = await selectApiTokenByHash(ctx.pool, hashTokenSecret(found.token));
  sendJson(res, 200, { token: found.token, expiresAt: row?.expires_at?.toISOString() ?? null });
}
