import { createHash } from "node:crypto";
import type { Page, Request } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type ConsolePage, newConsolePage } from "../helpers/console-page.js";
import { type SignInStand, signInWithFetch, startSignInStand } from "../sign-in/support.js";

/**
 * The console on a session from the identity provider, end to end in
 * Chromium: the console offers the provider, the provider's own login and
 * consent pages, back to the console with the session cookie. Every call
 * then carries the cookie and the session's CSRF token in X-CSRF-Token, no
 * Authorization header; the pages hide what the person's role cannot do;
 * Sign out posts /auth/logout and the session ends.
 */
let stand: SignInStand;
let console_: ConsolePage;
let page: Page;
const calls: Request[] = [];

beforeAll(async () => {
  stand = await startSignInStand({
    accounts: [
      { sub: "first", email: "first@example.org", name: "First" },
      { sub: "eve", email: "eve@example.org", name: "Eve" },
    ],
  });
  await stand.server.createSource("shop");
  // The first person ever to sign in becomes the owner; Eve, after, a viewer.
  await signInWithFetch(stand, "first");
  console_ = await newConsolePage(stand.server);
  page = console_.page;
  page.on("request", (request) => {
    if (request.url().includes("/waypost.v1.")) calls.push(request);
  });
});
afterAll(async () => {
  await console_?.browser.close();
  await stand?.close();
});

const nav = (name: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name, exact: true });

test("the console offers the identity provider, and comes back signed in on a session", async () => {
  const { url } = stand.server;
  await page.goto(`${url}/console/`);
  await page.getByRole("button", { name: "Sign in with your identity provider" }).click();
  await page.waitForURL((next) => next.href.startsWith(`${stand.provider.issuer}/interaction/`));
  await page.fill('input[name="login"]', "eve");
  await page.fill('input[name="password"]', "anything");
  await page.click('button[type="submit"]');
  await page.waitForSelector('button:has-text("Continue")');
  await page.click('button:has-text("Continue")');
  await page.waitForURL(`${url}/console/`);
  await page.getByText("eve@example.org (viewer)").waitFor();

  await nav("Sources").click();
  await page.getByRole("table", { name: "Sources" }).getByRole("row").filter({ hasText: "shop" }).waitFor();
  const { csrfToken } = await page.evaluate(async () => (await fetch("/auth/session")).json());
  expect(csrfToken).toMatch(/.{16,}/);
  expect(calls.length).toBeGreaterThan(1);
  for (const call of calls) {
    const headers = await call.allHeaders();
    expect(headers.authorization).toBeUndefined();
    expect(headers["x-csrf-token"]).toBe(csrfToken);
    expect(headers.cookie).toContain("waypost_session=");
  }
  expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
});

test("the pages hide what a viewer cannot do", async () => {
  expect(await page.getByRole("button", { name: "Create source" }).count()).toBe(0);
  expect(await page.getByRole("button", { name: "Delete shop" }).count()).toBe(0);
  await nav("Tokens").waitFor();
  expect(await nav("Audit log").count()).toBe(0);
  expect(await nav("Users").count()).toBe(0);
  // A person makes their own tokens, within their role; not service accounts'.
  await nav("Tokens").click();
  await page.getByRole("button", { name: "Create token" }).waitFor();
  expect(await page.getByLabel("Role").locator("option").allTextContents()).toEqual(["viewer"]);
  expect(await page.getByLabel("Service account").count()).toBe(0);
});

test("a change from another origin with the cookie but without the CSRF token is refused", async () => {
  const answer = await page.evaluate(async () => {
    const response = await fetch("/waypost.v1.TokenService/CreateToken", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: { name: "sneaky", role: "ROLE_VIEWER" } }),
    });
    return { status: response.status, body: await response.json() };
  });
  expect(answer.status).toBe(403);
  expect(answer.body.message).toContain("X-CSRF-Token");
});

test("Sign out ends the session: the old cookie opens nothing at the next request", async () => {
  const { url } = stand.server;
  const cookie = (await page.context().cookies(url)).find((item) => item.name === "waypost_session")!;
  const logout = page.waitForResponse(`${url}/auth/logout`);
  await page.getByRole("button", { name: "Sign out", exact: true }).click();
  expect((await logout).status()).toBe(200);
  await page.getByLabel("Admin token").waitFor();
  const { rows } = await stand.pool.query("SELECT revoked_at FROM user_sessions WHERE id_hash = $1", [
    createHash("sha256").update(cookie.value).digest(),
  ]);
  expect(rows[0].revoked_at).toBeInstanceOf(Date);
  const replayed = await fetch(`${url}/waypost.v1.SourceService/ListSources`, {
    method: "POST",
    headers: { "content-type": "application/json", cookie: `waypost_session=${cookie.value}`, "x-csrf-token": "anything" },
    body: "{}",
  });
  expect(replayed.status).toBe(401);
  expect(console_.problems).toEqual([]);
});
