import type pg from "pg";
import { parseAccess } from "../../src/access-config.js";
import { FetchBrowser, type Hop } from "../helpers/fetch-browser.js";
import { openTestDatabase } from "../helpers/database.js";
import { startOidcProvider, type TestAccount, type TestOidcProvider } from "../helpers/oidc-provider.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

// A real Waypost with sign-in configured, a real
// OpenID provider beside it, and a pool on Waypost's database to read the
// rows sign-in leaves.

export const clientId = "waypost-console";
export const clientSecret = "waypost-console-secret-0123456789";
/** A second application registered at the provider: its ID tokens have the wrong audience for Waypost. */
export const otherClientId = "another-app";

export interface SignInStand {
  provider: TestOidcProvider;
  server: TestServer;
  pool: pg.Pool;
  close(): Promise<void>;
}

export interface SignInStandOptions {
  /** WAYPOST_OIDC_* and session settings over the stand's issuer, client and scopes. */
  env?: Record<string, string>;
  accounts?: TestAccount[];
  /** More redirect URIs to register for Waypost's client (a proxy in front of it). */
  extraRedirectUris?: (waypostUrl: string) => string[];
  conformIdTokenClaims?: boolean;
}

export async function startSignInStand(options: SignInStandOptions = {}): Promise<SignInStand> {
  const provider = await startOidcProvider(options.accounts);
  const { database, pool, close: closeDatabase } = await openTestDatabase();
  const access = parseAccess({
    WAYPOST_OIDC_ISSUER: provider.issuer,
    WAYPOST_OIDC_CLIENT_ID: clientId,
    WAYPOST_OIDC_CLIENT_SECRET: clientSecret,
    WAYPOST_OIDC_SCOPES: "openid email profile groups",
    // The tests sign in many times a second from one address; sign-in-throttle.test.ts tests the throttle.
    WAYPOST_SIGN_IN_RATE: "10000",
    ...options.env,
  });
  // The server serves /auth/* from its own config.access, as in production.
  const server = await startTestServer({ database, config: { access } });
  provider.configure({
    clients: [
      { clientId, clientSecret, redirectUris: [`${server.url}/auth/callback`, ...(options.extraRedirectUris?.(server.url) ?? [])] },
      { clientId: otherClientId, clientSecret: "another-app-secret-0123456789", redirectUris: ["http://127.0.0.1:9/callback"] },
    ],
    ...(options.conformIdTokenClaims === undefined ? {} : { conformIdTokenClaims: options.conformIdTokenClaims }),
  });
  return {
    provider,
    server,
    pool,
    async close() {
      await server.stop();
      await closeDatabase();
      await provider.close();
    },
  };
}

export interface BrowserSignIn {
  browser: FetchBrowser;
  hops: Hop[];
  /** Waypost's answer to the provider's callback. */
  callback: Hop;
}

/** A sign-in from /auth/login through the provider's forms to Waypost's callback, in a fresh FetchBrowser unless given one. */
export async function signInWithFetch(
  stand: SignInStand,
  login: string,
  options: { returnTo?: string; browser?: FetchBrowser } = {},
): Promise<BrowserSignIn> {
  const browser = options.browser ?? new FetchBrowser();
  const start = new URL("/auth/login", stand.server.url);
  if (options.returnTo !== undefined) start.searchParams.set("return_to", options.returnTo);
  const isCallback = (hop: Hop) => hop.url.startsWith(`${stand.server.url}/auth/callback`);
  let hops = await browser.follow(start.href, {}, isCallback);
  if (!hops.some(isCallback)) hops = await browser.completeProviderInteractions(hops, login, stand.provider.issuer, isCallback);
  const callback = hops.find(isCallback);
  if (!callback)
    throw new Error(`the sign-in never reached Waypost's callback: ${hops.map((hop) => `${hop.status} ${hop.url}`).join(" → ")}`);
  return { browser, hops, callback };
}

/** GET /auth/session with the browser's cookies. */
export async function sessionOf(stand: SignInStand, browser: FetchBrowser): Promise<any> {
  const response = await browser.request(`${stand.server.url}/auth/session`);
  return response.json();
}

export async function auditRows(pool: pg.Pool, action: string): Promise<any[]> {
  const { rows } = await pool.query("SELECT * FROM audit_events WHERE action = $1 ORDER BY id", [action]);
  return rows;
}
