import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { FetchBrowser } from "../helpers/fetch-browser.js";
import { auditRows, type SignInStand, sessionOf, signInWithFetch, startSignInStand } from "./support.js";

// Sign-in over real HTTP against a real provider, driven by fetch through
// the provider's development forms: sessions, the allowed domains, the ID
// token's checks, the state's single use, logout and the session's answer.

let stand: SignInStand;

beforeAll(async () => {
  stand = await startSignInStand({
    env: { WAYPOST_OIDC_ALLOWED_DOMAINS: "example.com" },
    accounts: [
      { sub: "alice", email: "alice@example.com", email_verified: true, name: "Alice Adams" },
      { sub: "bob", email: "Bob@Example.com", name: "Bob Brown" },
      { sub: "oscar", email: "oscar@example.org", email_verified: true },
      { sub: "eve", email: "eve@example.com", email_verified: false },
    ],
  });
});
afterAll(async () => {
  await stand?.close();
});

const sha256 = (text: string) => createHash("sha256").update(text).digest();
const sessionCookieOf = (setCookie: string | null) => /waypost_session=([^;]+)/.exec(setCookie ?? "")?.[1];

async function count(sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await stand.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${sql}`, params);
  return Number(rows[0]!.n);
}

test("a sign-in starts a session: the cookie, the user and session rows, the audit row, and /auth/session", async () => {
  const { browser, callback, hops } = await signInWithFetch(stand, "alice", { returnTo: "/console/sources?x=1" });
  expect(callback.status, callback.body).toBe(303);
  expect(callback.headers.get("location")).toBe("/console/sources?x=1");
  const setCookie = callback.headers.get("set-cookie")!;
  expect(setCookie).toMatch(/^waypost_session=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=43200; HttpOnly; SameSite=Lax$/);
  const sessionId = sessionCookieOf(setCookie)!;

  // The login went to the provider with PKCE S256, a state and a nonce.
  const authorize = new URL(hops[1]!.url);
  expect(authorize.origin).toBe(stand.provider.issuer);
  expect(authorize.searchParams.get("code_challenge_method")).toBe("S256");
  expect(authorize.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect(authorize.searchParams.get("state")).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect(authorize.searchParams.get("nonce")).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect(authorize.searchParams.get("scope")).toBe("openid email profile groups");
  expect(authorize.searchParams.get("redirect_uri")).toBe(`${stand.server.url}/auth/callback`);

  const answer = await browser.request(`${stand.server.url}/auth/session`);
  expect(answer.headers.get("cache-control")).toBe("no-store");
  const session = await answer.json();
  // The first user ever, with no role from a group: the owner.
  expect(session).toEqual({
    signedIn: true,
    oidc: true,
    user: { id: expect.any(String), email: "alice@example.com", name: "Alice Adams", role: "owner" },
    csrfToken: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
  });

  const { rows: users } = await stand.pool.query("SELECT * FROM users WHERE subject = 'alice'");
  expect(users).toEqual([
    expect.objectContaining({ issuer: stand.provider.issuer, email: "alice@example.com", role: "owner", role_from_claim: false }),
  ]);
  const { rows: sessions } = await stand.pool.query("SELECT * FROM user_sessions WHERE id_hash = $1", [sha256(sessionId)]);
  expect(sessions).toHaveLength(1);
  expect(sessions[0].user_id).toBe(users[0].id);
  expect(sessions[0].csrf_token).toBe(session.csrfToken);
  const lifetime = sessions[0].expires_at.getTime() - sessions[0].created_at.getTime();
  expect(lifetime).toBe(12 * 3600_000);

  const [audit] = (await auditRows(stand.pool, "session.sign_in")).filter((row) => row.actor_id === users[0].id);
  expect(audit).toMatchObject({
    actor_kind: "user",
    actor_name: "alice@example.com",
    outcome: "ok",
    target_kind: "user",
    client_address: "127.0.0.1",
    user_agent: browser.userAgent,
    diff: { via: "browser" },
  });
  expect(audit.request_id).toMatch(/^[0-9a-f-]{36}$/);
  // Nothing secret in the audit row: not the session id, its CSRF token, the code or the state.
  const callbackQuery = new URL(callback.url).searchParams;
  const text = JSON.stringify(audit);
  for (const secret of [sessionId, session.csrfToken, callbackQuery.get("code")!, callbackQuery.get("state")!])
    expect(text).not.toContain(secret);
});

test("an email without email_verified is taken as the provider gives it, lowercased; return_to off the console is dropped", async () => {
  const { browser, callback } = await signInWithFetch(stand, "bob", { returnTo: "https://evil.example/console/" });
  expect(callback.status, callback.body).toBe(303);
  expect(callback.headers.get("location")).toBe("/console/");
  const session = await sessionOf(stand, browser);
  // Not the first user: the default role.
  expect(session.user).toMatchObject({ email: "bob@example.com", role: "viewer" });
});

test("an email outside WAYPOST_OIDC_ALLOWED_DOMAINS is refused with a page naming the domain, an audit row and no session", async () => {
  const sessionsBefore = await count("user_sessions");
  const { browser, callback } = await signInWithFetch(stand, "oscar");
  expect(callback.status).toBe(403);
  expect(callback.headers.get("content-type")).toBe("text/html; charset=utf-8");
  expect(callback.body).toContain("email domain example.org is not allowed");
  expect(callback.headers.get("set-cookie")).toBeNull();
  expect(await count("user_sessions")).toBe(sessionsBefore);
  expect(await count("users WHERE subject = 'oscar'")).toBe(0);
  expect((await sessionOf(stand, browser)).signedIn).toBe(false);
  const failed = await auditRows(stand.pool, "session.sign_in_failed");
  expect(failed).toContainEqual(
    expect.objectContaining({
      actor_kind: "anonymous",
      actor_id: "",
      actor_name: "oscar@example.org",
      outcome: "email domain example.org is not allowed (WAYPOST_OIDC_ALLOWED_DOMAINS)",
    }),
  );
});

test("an email the provider says is not verified is refused", async () => {
  const { callback } = await signInWithFetch(stand, "eve");
  expect(callback.status).toBe(403);
  expect(callback.body).toContain("email eve@example.com is not verified by the identity provider");
  expect(await count("users WHERE subject = 'eve'")).toBe(0);
});

describe("ID tokens openid-client refuses", () => {
  test("an expired ID token: a 401 page, an audit row, no session", async () => {
    const sessionsBefore = await count("user_sessions");
    stand.provider.idToken.ttlSeconds = -3600;
    try {
      const { callback } = await signInWithFetch(stand, "alice");
      expect(callback.status).toBe(401);
      expect(callback.body).toContain(
        "the identity provider&#39;s answer was refused: unexpected JWT &quot;exp&quot; (expiration time) claim value, expiration is past",
      );
      expect(callback.headers.get("set-cookie")).toBeNull();
    } finally {
      stand.provider.idToken.ttlSeconds = 600;
    }
    expect(await count("user_sessions")).toBe(sessionsBefore);
    const [last] = (await auditRows(stand.pool, "session.sign_in_failed")).slice(-1);
    expect(last.outcome).toMatch(/^the identity provider's answer was refused: .*"exp"/);
  });

  test("an ID token for another client (wrong audience): refused the same way", async () => {
    const sessionsBefore = await count("user_sessions");
    stand.provider.idToken.audienceClientId = "another-app";
    try {
      const { callback } = await signInWithFetch(stand, "alice");
      expect(callback.status).toBe(401);
      expect(callback.body).toContain(
        "the identity provider&#39;s answer was refused: unexpected JWT &quot;aud&quot; (audience) claim value",
      );
    } finally {
      stand.provider.idToken.audienceClientId = undefined;
    }
    expect(await count("user_sessions")).toBe(sessionsBefore);
    const [last] = (await auditRows(stand.pool, "session.sign_in_failed")).slice(-1);
    expect(last.outcome).toMatch(/"aud"/);
  });
});

describe("the state of a sign-in", () => {
  test("is used once: the callback replayed is refused and audited", async () => {
    const { callback } = await signInWithFetch(stand, "alice");
    expect(callback.status).toBe(303);
    const failedBefore = (await auditRows(stand.pool, "session.sign_in_failed")).length;
    const replay = await new FetchBrowser().request(callback.url);
    expect(replay.status).toBe(400);
    expect(await replay.text()).toContain("unknown or expired sign-in state");
    const failed = await auditRows(stand.pool, "session.sign_in_failed");
    expect(failed).toHaveLength(failedBefore + 1);
    expect(failed.at(-1)).toMatchObject({ actor_kind: "anonymous", outcome: expect.stringContaining("unknown or expired sign-in state") });
  });

  test("an unknown state is refused; a callback without a state's shape is refused without an audit row", async () => {
    const failedBefore = (await auditRows(stand.pool, "session.sign_in_failed")).length;
    const unknown = await fetch(`${stand.server.url}/auth/callback?code=abc&state=${"A".repeat(43)}`);
    expect(unknown.status).toBe(400);
    expect(await unknown.text()).toContain("unknown or expired sign-in state");
    const garbage = await fetch(`${stand.server.url}/auth/callback?code=abc&state=%3Cscript%3E`);
    expect(garbage.status).toBe(400);
    const page = await garbage.text();
    expect(page).toContain("no valid <code>state</code>");
    expect(page).not.toContain("<script>");
    expect(await auditRows(stand.pool, "session.sign_in_failed")).toHaveLength(failedBefore + 1);
  });
});

describe("logout", () => {
  test("needs the session's X-CSRF-Token; then the old cookie no longer opens a session", async () => {
    const { browser, callback } = await signInWithFetch(stand, "alice");
    const cookie = `waypost_session=${sessionCookieOf(callback.headers.get("set-cookie"))}`;
    const { csrfToken, user } = await sessionOf(stand, browser);

    const without = await fetch(`${stand.server.url}/auth/logout`, { method: "POST", headers: { cookie } });
    expect(without.status).toBe(403);
    expect((await without.json()).error).toContain("X-CSRF-Token");
    const wrong = await fetch(`${stand.server.url}/auth/logout`, { method: "POST", headers: { cookie, "x-csrf-token": "x".repeat(43) } });
    expect(wrong.status).toBe(403);
    expect((await sessionOf(stand, browser)).signedIn).toBe(true);

    const out = await fetch(`${stand.server.url}/auth/logout`, { method: "POST", headers: { cookie, "x-csrf-token": csrfToken } });
    expect(out.status).toBe(200);
    expect(out.headers.get("set-cookie")).toMatch(/^waypost_session=; Path=\/; Max-Age=0; HttpOnly; SameSite=Lax$/);
    const after = await fetch(`${stand.server.url}/auth/session`, { headers: { cookie } });
    expect(await after.json()).toEqual({ signedIn: false, oidc: true });
    const { rows } = await stand.pool.query("SELECT revoked_at FROM user_sessions WHERE id_hash = $1", [sha256(cookie.split("=")[1]!)]);
    expect(rows[0].revoked_at).toBeInstanceOf(Date);
    expect(await auditRows(stand.pool, "session.sign_out")).toContainEqual(
      expect.objectContaining({ actor_kind: "user", actor_id: user.id, outcome: "ok" }),
    );
  });
});

describe("/auth/session", () => {
  test("answers signed out without a cookie, or with garbage in it, and is never cached", async () => {
    for (const cookie of [undefined, "waypost_session=nope", `waypost_session=${"%".repeat(5000)}`, "a=b; waypost_session"]) {
      const response = await fetch(`${stand.server.url}/auth/session`, { headers: cookie ? { cookie } : {} });
      expect(response.status).toBe(200);
      expect(response.headers.get("cache-control")).toBe("no-store");
      expect(await response.json()).toEqual({ signedIn: false, oidc: true });
    }
  });

  test("refuses cross-site requests", async () => {
    const { browser } = await signInWithFetch(stand, "alice");
    const crossSite = await browser.request(`${stand.server.url}/auth/session`, { headers: { "sec-fetch-site": "cross-site" } });
    expect(crossSite.status).toBe(403);
    const otherOrigin = await browser.request(`${stand.server.url}/auth/session`, { headers: { origin: "http://evil.example" } });
    expect(otherOrigin.status).toBe(403);
    expect((await otherOrigin.json()).error).toContain("Origin http://evil.example is not");
    const sameOrigin = await browser.request(`${stand.server.url}/auth/session`, {
      headers: { origin: stand.server.url, "sec-fetch-site": "same-origin" },
    });
    expect((await sameOrigin.json()).signedIn).toBe(true);
  });

  test("other methods and unknown paths under /auth/ are refused by name", async () => {
    const post = await fetch(`${stand.server.url}/auth/session`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    const unknown = await fetch(`${stand.server.url}/auth/nothing`);
    expect(unknown.status).toBe(404);
  });
});
