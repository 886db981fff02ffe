import { createHash } from "node:crypto";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { launchBrowser } from "../helpers/browser.js";
import { auditRows, type SignInStand, startSignInStand } from "./support.js";

// The sign-in as a person makes it, in Chromium: Waypost's /auth/login,
// the provider's login form and consent page, and back to the console,
// with the cookie the browser kept.

let stand: SignInStand;
let browser: Browser;

beforeAll(async () => {
  stand = await startSignInStand({
    env: { WAYPOST_OIDC_ROLE_MAPPING: "waypost-admins=admin" },
    accounts: [
      { sub: "owner", email: "owner@example.com", name: "First Owner" },
      { sub: "grace", email: "grace@example.com", email_verified: true, name: "Grace Hopper", groups: ["waypost-admins"] },
    ],
  });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await stand?.close();
});

test("login, the provider's forms, back in the console: a cookie, a session of the right user and role, rows and an audit row", async () => {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(`${stand.server.url}/auth/login?return_to=/console/destinations`);
    // The provider's development login form: any login name, any password.
    await page.waitForURL((url) => url.href.startsWith(`${stand.provider.issuer}/interaction/`));
    await page.fill('input[name="login"]', "grace");
    await page.fill('input[name="password"]', "anything");
    await page.click('button[type="submit"]');
    // Its consent page.
    await page.waitForSelector('button:has-text("Continue")');
    await page.click('button:has-text("Continue")');
    await page.waitForURL(`${stand.server.url}/console/destinations`);

    const cookies = await context.cookies(stand.server.url);
    const session = cookies.find((cookie) => cookie.name === "waypost_session");
    expect(session).toMatchObject({ httpOnly: true, sameSite: "Lax", secure: false, path: "/", domain: "127.0.0.1" });
    expect(session!.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // No script of the page can read it.
    expect(await page.evaluate(() => document.cookie)).not.toContain("waypost_session");

    // The console's own question, asked from the page (same origin, with the cookie).
    const answer = await page.evaluate(async () => {
      const response = await fetch("/auth/session");
      return { status: response.status, cacheControl: response.headers.get("cache-control"), body: await response.json() };
    });
    expect(answer.status).toBe(200);
    expect(answer.cacheControl).toBe("no-store");
    expect(answer.body).toMatchObject({
      signedIn: true,
      oidc: true,
      user: { email: "grace@example.com", name: "Grace Hopper", role: "admin" },
    });

    const { rows: users } = await stand.pool.query("SELECT * FROM users WHERE email = 'grace@example.com'");
    expect(users).toEqual([expect.objectContaining({ role: "admin", role_from_claim: true, subject: "grace" })]);
    const idHash = createHash("sha256").update(session!.value).digest();
    const { rows: sessions } = await stand.pool.query("SELECT * FROM user_sessions WHERE id_hash = $1 AND revoked_at IS NULL", [idHash]);
    expect(sessions).toEqual([expect.objectContaining({ user_id: users[0].id, csrf_token: answer.body.csrfToken })]);
    const audit = (await auditRows(stand.pool, "session.sign_in")).filter((row) => row.actor_id === users[0].id);
    expect(audit).toEqual([expect.objectContaining({ outcome: "ok", actor_kind: "user", actor_name: "grace@example.com" })]);
    expect(audit[0].user_agent).toContain("Chrome");

    // Sign out from the page, as the console does.
    const out = await page.evaluate(async (csrfToken: string) => {
      const response = await fetch("/auth/logout", { method: "POST", headers: { "x-csrf-token": csrfToken } });
      return response.status;
    }, answer.body.csrfToken);
    expect(out).toBe(200);
    expect((await context.cookies(stand.server.url)).some((cookie) => cookie.name === "waypost_session")).toBe(false);
    const after = await page.evaluate(async () => (await fetch("/auth/session")).json());
    expect(after).toEqual({ signedIn: false, oidc: true });
  } finally {
    await context.close();
  }
});
