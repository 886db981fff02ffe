import { createHash, randomBytes } from "node:crypto";
import type { Page, Request } from "playwright-core";
import { afterAll, expect } from "vitest";
import { type ConsolePage, newConsolePage } from "../helpers/console-page.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";

/**
 * The console on a session from the identity provider: the cookie goes
 * with every call, the session's CSRF token in X-CSRF-Token beside it, and
 * no Authorization header; the pages hide what the person's role cannot do;
 * Sign out posts /auth/logout with the CSRF token.
 *
 * The /auth routes are not on this branch. The session row and its cookie
 * are made here as the sign-in would make them, and GET /auth/session,
 * POST /auth/logout and GET /auth/login are Playwright stand-ins
 * (page.route): once the real routes are merged, this test should sign in
 * through them (and the stand-ins go).
 */
let console_: ConsolePage;
let page: Page;
let csrfToken = "";
let userId = "";
const calls: Request[] = [];
const logouts: Request[] = [];

/** A session row for `userId`, as a sign-in makes it: the cookie's value is the random id, the row keeps its sha256. */
async function newSession(server: TestServer, user: string): Promise<{ id: string; csrf: string }> {
  const id = randomBytes(32).toString("base64url");
  const csrf = randomBytes(24).toString("base64url");
  await server.pool.query(
    `INSERT INTO user_sessions (id_hash, user_id, csrf_token, expires_at) VALUES ($1, $2, $3, now() + interval '1 hour')`,
    [createHash("sha256").update(id).digest(), user, csrf],
  );
  return { id, csrf };
}

/** The stand-in of GET /auth/session (and /auth/logout, /auth/login) for `page`, answering as the server will. */
async function standIn(p: Page, server: TestServer, csrf: string) {
  await p.route(`${server.url}/auth/session`, (route) =>
    route.fulfill({
      json: { signedIn: true, oidc: true, user: { id: userId, email: "eve@example.org", name: "Eve", role: "viewer" }, csrfToken: csrf },
    }),
  );
  await p.route(`${server.url}/auth/logout`, (route) => {
    logouts.push(route.request());
    return route.fulfill({ status: 204 });
  });
  await p.route(`${server.url}/auth/login?**`, (route) => route.fulfill({ contentType: "text/html", body: "<title>provider</title>" }));
}

const test = testWith();
test.beforeAll(async ({ server }) => {
  await server.createSource("shop");
  const { rows } = await server.pool.query<{ id: string }>(
    `INSERT INTO users (issuer, subject, email, name, role) VALUES ('https://idp.example', 'sub-eve', 'eve@example.org', 'Eve', 'viewer') RETURNING id`,
  );
  userId = rows[0]!.id;
  const session = await newSession(server, userId);
  csrfToken = session.csrf;
  console_ = await newConsolePage(server);
  page = console_.page;
  await page.context().addCookies([{ name: "waypost_session", value: session.id, url: server.url, httpOnly: true, sameSite: "Lax" }]);
  await standIn(page, server, csrfToken);
  page.on("request", (request) => {
    if (request.url().includes("/waypost.v1.")) calls.push(request);
  });
});
afterAll(async () => {
  await console_?.browser.close();
});

const nav = (name: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name, exact: true });

test("with a session, the console opens without a token and lists sources on the cookie and the CSRF token", async ({ server }) => {
  await page.goto(`${server.url}/console/`);
  await page.getByText("eve@example.org (viewer)").waitFor();
  await nav("Sources").click();
  await page.getByRole("table", { name: "Sources" }).getByRole("row").filter({ hasText: "shop" }).waitFor();

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

test("Sign out posts /auth/logout with the CSRF token, and the sign-in page offers the identity provider", async ({ server }) => {
  const logout = page.waitForRequest(`${server.url}/auth/logout`);
  await page.getByRole("button", { name: "Sign out", exact: true }).click();
  await logout;
  await page.getByLabel("Admin token").waitFor();
  expect(logouts).toHaveLength(1);
  expect(logouts[0]!.method()).toBe("POST");
  expect(await logouts[0]!.headerValue("x-csrf-token")).toBe(csrfToken);

  await page.getByRole("button", { name: "Sign in with your identity provider" }).click();
  await page.waitForURL(`${server.url}/auth/login?return_to=/console/`);
  expect(console_.problems).toEqual([]);
});

test("a session whose CSRF token is not the one sent is refused: the sign-in page says why", async ({ server }) => {
  const session = await newSession(server, userId);
  const other = await newConsolePage(server);
  try {
    await other.page.context().addCookies([{ name: "waypost_session", value: session.id, url: server.url }]);
    await standIn(other.page, server, "not-the-csrf-token");
    await other.page.goto(`${server.url}/console/`);
    await other.page.getByRole("alert").filter({ hasText: "X-CSRF-Token header missing or wrong" }).waitFor();
    await other.page.getByRole("button", { name: "Sign in with your identity provider" }).waitFor();
  } finally {
    await other.browser.close();
  }
});
