import { hashSessionId } from "../access/credentials.js";
import { refuseCliSignIn, type SignInAttemptRow, takeSignInAttempt } from "../db/queries/access/sign-in-attempts.js";
import { insertSession } from "../db/queries/access/user-sessions.js";
import { selectUserBySubject, type UserRow, upsertSignedInUser } from "../db/queries/access/users.js";
import type { Req, Res } from "../http/types.js";
import { checkAdmission, ClaimsRefusal, identityOf, roleFromClaims } from "./claims-policy.js";
import { issueCliToken } from "./cli-sign-in.js";
import { ProviderAnswerRefused, ProviderUnavailable } from "./oidc-client.js";
import { serializeSessionCookie } from "../access/session-cookie.js";
import { randomSecret, redirectUriOf, type SignInContext, statePattern } from "./sign-in-context.js";
import { clientAddressOf, cookieSecure, escapeHtml, queryOf, redirect, requestOrigin, sendPage, userAgentOf } from "./sign-in-request.js";

// GET /auth/callback: where the provider sends the browser back with a code.
// The attempt of its state is taken (once), the code exchanged (openid-client
// checks the ID token), the claims judged (claims-policy.ts), and then a
// console session starts, or, for `waypost login`, a token is left for the
// CLI to collect. Every outcome past a well-formed state is an audit row.

/** A refused sign-in: its status and the reason shown and audited. */
class CallbackRefusal extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly email = "",
  ) {
    super(message);
  }
}

export async function handleCallback(ctx: SignInContext, req: Req, res: Res): Promise<void> {
  const query = queryOf(req);
  const state = query.get("state") ?? "";
  // Not a sign-in at all (a crawler, a mistyped URL): refused, not audited.
  if (!statePattern.test(state)) {
    sendPage(res, 400, "Sign-in failed", `<p>The identity provider's answer has no valid <code>state</code>.</p>${againLink}`);
    return;
  }
  const attempt = await takeSignInAttempt(ctx.pool, state, ctx.clock.now());
  if (!attempt) {
    const reason = "unknown or expired sign-in state (already used, or older than 10 minutes)";
    await ctx.audit.record(req, { action: "session.sign_in_failed", outcome: reason });
    sendPage(res, 400, "Sign-in failed", `<p>This sign-in is ${escapeHtml(reason)}.</p>${againLink}`);
    return;
  }
  const cli = attempt.cli_poll_hash !== null;
  try {
    const user = await signIn(ctx, req, attempt);
    if (cli) {
      const token = await issueCliToken(ctx, req, user, attempt.state);
      await ctx.audit.record(req, { action: "session.sign_in", user, outcome: "ok", target: { kind: "token", id: token.id }, via: "cli" });
      ctx.logger.info({ userId: user.id, tokenId: token.id }, "signed in for waypost login");
      sendPage(res, 200, "Signed in", "<p>Signed in: you can close this tab and return to the terminal.</p>");
      return;
    }
    const sessionId = randomSecret();
    const now = ctx.clock.now();
    await insertSession(ctx.pool, {
      idHash: hashSessionId(sessionId),
      userId: user.id,
      csrfToken: randomSecret(),
      now,
      expiresAt: new Date(now.getTime() + ctx.access.sessions.absoluteMs),
      clientAddress: clientAddressOf(req),
      userAgent: userAgentOf(req),
    });
    await ctx.audit.record(req, { action: "session.sign_in", user, outcome: "ok", target: { kind: "user", id: user.id }, via: "browser" });
    ctx.logger.info({ userId: user.id }, "signed in");
    const cookie = serializeSessionCookie(sessionId, {
      secure: cookieSecure(requestOrigin(req, ctx.access.publicUrl)),
      maxAgeSeconds: ctx.access.sessions.absoluteMs / 1000,
    });
    redirect(res, 303, attempt.return_to, { "set-cookie": cookie });
  } catch (error) {
    const refusal = asRefusal(error);
    if (cli) await refuseCliSignIn(ctx.pool, attempt.state);
    await ctx.audit.record(req, {
      action: "session.sign_in_failed",
      email: refusal.email,
      outcome: refusal.message,
      via: cli ? "cli" : "browser",
    });
    ctx.logger.info({ reason: refusal.message }, "a sign-in was refused");
    const hint = cli ? "<p>Run <code>waypost login</code> again once this is solved.</p>" : againLink;
    sendPage(res, refusal.status, "Sign-in refused", `<p>${escapeHtml(refusal.message)}.</p>${hint}`);
  }
}

const againLink = '<p><a href="/auth/login">Sign in again</a></p>';

/** The provider's answer to a user row: exchanged, judged by the claims, disabled users refused. */
async function signIn(ctx: SignInContext, req: Req, attempt: SignInAttemptRow): Promise<UserRow> {
  const oidc = ctx.oidc!;
  const callbackUrl = new URL(redirectUriOf(oidc.config, requestOrigin(req, ctx.access.publicUrl)));
  callbackUrl.search = queryOf(req).toString();
  const needsGroups = oidc.config.allowedGroups.length > 0 || oidc.config.roleMapping.size > 0;
  const exchanged = await oidc.client.exchange({
    callbackUrl,
    state: attempt.state,
    nonce: attempt.nonce,
    codeVerifier: attempt.code_verifier,
    wantedClaims: ["email", "name", ...(needsGroups ? [oidc.config.groupsClaim] : [])],
  });
  const identity = identityOf(exchanged.claims, oidc.config.groupsClaim);
  checkAdmission(identity, oidc.config);
  const existing = await selectUserBySubject(ctx.pool, exchanged.issuer, identity.subject);
  if (existing?.disabled) throw new CallbackRefusal(403, `user ${identity.email} is disabled`, identity.email);
  const user = await upsertSignedInUser(ctx.pool, {
    issuer: exchanged.issuer,
    subject: identity.subject,
    email: identity.email,
    name: identity.name,
    roleFromClaim: roleFromClaims(identity.groups, oidc.config, existing),
    defaultRole: oidc.config.defaultRole,
    now: ctx.clock.now(),
  });
  // Disabled between the read and the write: still refused.
  if (user.disabled) throw new CallbackRefusal(403, `user ${identity.email} is disabled`, identity.email);
  return user;
}

/** Every failure as a status and a reason fit to show and to audit; nothing else is let through. */
function asRefusal(error: unknown): CallbackRefusal {
  if (error instanceof CallbackRefusal) return error;
  if (error instanceof ClaimsRefusal) return new CallbackRefusal(403, error.message, error.email);
  if (error instanceof ProviderAnswerRefused) return new CallbackRefusal(error.byProvider ? 403 : 401, error.message);
  if (error instanceof ProviderUnavailable) return new CallbackRefusal(502, error.message);
  throw error;
}
