import { afterAll, beforeAll, expect, test } from "vitest";
import { parseAccess } from "../../src/access-config.js";
import { systemClock } from "../../src/clock.js";
import { ConfigError } from "../../src/config-values.js";
import { createLogger } from "../../src/logger.js";
import { createSignInRoutes } from "../../src/sign-in/sign-in-routes.js";
import { openTestDatabase, type OpenTestDatabase } from "../helpers/database.js";
import { startOidcProvider } from "../helpers/oidc-provider.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

// Without WAYPOST_OIDC_ISSUER: the console still asks /auth/session (and
// learns there is no sign-in), the rest says what is missing.

let db: OpenTestDatabase;
let server: TestServer;

beforeAll(async () => {
  db = await openTestDatabase();
  const access = parseAccess({});
  const routes = createSignInRoutes({ pool: db.pool, clock: systemClock, logger: createLogger("silent"), config: access });
  server = await startTestServer({ database: db.database, config: { access }, routes: (defaults) => [routes, ...defaults] });
});
afterAll(async () => {
  await server?.stop();
  await db?.close();
});

test("/auth/session answers signed out, without sign-in", async () => {
  const response = await fetch(`${server.url}/auth/session`);
  expect(response.status).toBe(200);
  expect(await response.json()).toEqual({ signedIn: false, oidc: false });
});

test("the sign-in routes answer 404 naming the missing setting", async () => {
  for (const [method, path] of [
    ["GET", "/auth/login"],
    ["GET", "/auth/callback?code=x&state=y"],
    ["POST", "/auth/cli/start"],
    ["POST", "/auth/cli/poll"],
  ] as const) {
    const response = await fetch(`${server.url}${path}`, { method });
    expect(response.status, path).toBe(404);
    const body = path.startsWith("/auth/cli/") ? (await response.json()).error : await response.text();
    expect(body).toContain("sign-in is not configured (WAYPOST_OIDC_ISSUER)");
  }
});

test("other paths are left to the rest of Waypost", async () => {
  const health = await fetch(`${server.url}/healthz`);
  expect(health.status).toBe(200);
});

test("an http issuer off loopback is refused at start; a provider down at start is not", async () => {
  const remote = parseAccess({ WAYPOST_OIDC_ISSUER: "http://idp.example.com", WAYPOST_OIDC_CLIENT_ID: "c" });
  expect(() => createSignInRoutes({ pool: db.pool, clock: systemClock, logger: createLogger("silent"), config: remote })).toThrow(
    ConfigError,
  );
  const down = parseAccess({ WAYPOST_OIDC_ISSUER: "http://127.0.0.1:9", WAYPOST_OIDC_CLIENT_ID: "c" });
  const routes = createSignInRoutes({ pool: db.pool, clock: systemClock, logger: createLogger("silent"), config: down });
  const other = await startTestServer({ database: db.database, config: { access: down }, routes: (defaults) => [routes, ...defaults] });
  try {
    const login = await fetch(`${other.url}/auth/login`, { redirect: "manual" });
    expect(login.status).toBe(502);
    expect(await login.text()).toContain("the identity provider at http://127.0.0.1:9 could not be reached");
    // Nothing was left behind for a sign-in that could not start.
    const { rows } = await db.pool.query("SELECT count(*)::int AS n FROM sign_in_attempts");
    expect(rows[0].n).toBe(0);
  } finally {
    await other.stop();
  }
});

test("discovery is retried after a failure, then kept", async () => {
  const provider = await startOidcProvider();
  const access = parseAccess({ WAYPOST_OIDC_ISSUER: provider.issuer, WAYPOST_OIDC_CLIENT_ID: "c", WAYPOST_OIDC_CLIENT_SECRET: "s" });
  const routes = createSignInRoutes({ pool: db.pool, clock: systemClock, logger: createLogger("silent"), config: access });
  const other = await startTestServer({ database: db.database, config: { access }, routes: (defaults) => [routes, ...defaults] });
  try {
    // The provider answers 503 until it is configured: down when Waypost started.
    const down = await fetch(`${other.url}/auth/login`, { redirect: "manual" });
    expect(down.status).toBe(502);
    expect(await down.text()).toContain("could not be reached");
    provider.configure({ clients: [{ clientId: "c", clientSecret: "s", redirectUris: [`${other.url}/auth/callback`] }] });
    const up = await fetch(`${other.url}/auth/login`, { redirect: "manual" });
    expect(up.status).toBe(302);
    expect(up.headers.get("location")).toMatch(new RegExp(`^${provider.issuer}/auth\\?`));
    // Kept: with the provider gone, the URL is still built (the browser would find it down).
    await provider.close();
    const kept = await fetch(`${other.url}/auth/login`, { redirect: "manual" });
    expect(kept.status).toBe(302);
  } finally {
    await other.stop();
    await provider.close();
  }
});
