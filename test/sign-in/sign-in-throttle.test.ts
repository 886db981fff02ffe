import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAccess } from "../../src/access-config.js";
import { ManualClock } from "../../src/clock.js";
import { createRouteTable } from "../../src/http/route-table.js";
import { createLogger } from "../../src/logger.js";
import { createSignInRoutes } from "../../src/sign-in/sign-in-routes.js";
import { openTestDatabase, type OpenTestDatabase } from "../helpers/database.js";
import { startOidcProvider, type TestOidcProvider } from "../helpers/oidc-provider.js";

// Anonymous sign-in requests are slowed per address and capped in number,
// on a clock the test moves (no timing of the machine in it).

let provider: TestOidcProvider;
let database: OpenTestDatabase;
let server: http.Server;
let url = "";
const clock = new ManualClock(new Date());

beforeAll(async () => {
  provider = await startOidcProvider([]);
  database = await openTestDatabase();
  const logger = createLogger("silent");
  const routes = createSignInRoutes({
    pool: database.pool,
    clock,
    logger,
    config: parseAccess({
      WAYPOST_OIDC_ISSUER: provider.issuer,
      WAYPOST_OIDC_CLIENT_ID: "waypost",
      WAYPOST_SIGN_IN_RATE: "2",
      WAYPOST_SIGN_IN_MAX_PENDING: "3",
    }),
  });
  server = http.createServer(createRouteTable({ routes: [routes], logger }));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  provider.configure({
    clients: [{ clientId: "waypost", clientSecret: "unused-secret-0123456789", redirectUris: [`${url}/auth/callback`] }],
  });
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await database?.close();
  await provider?.close();
});

const login = () => fetch(`${url}/auth/login?return_to=/console/`, { redirect: "manual" });

describe("the sign-in throttle", () => {
  it("slows one address past its rate, then lets it in again as time passes", async () => {
    expect((await login()).status).toBe(302);
    expect((await login()).status).toBe(302);
    const slowed = await login();
    expect(slowed.status).toBe(429);
    expect(await slowed.text()).toContain("too many sign-in requests from 127.0.0.1");
    const callback = await fetch(`${url}/auth/callback?code=x&state=${"a".repeat(43)}`, { redirect: "manual" });
    expect(callback.status).toBe(429);
    // Polls are not counted: a waiting CLI polls once a second.
    const poll = await fetch(`${url}/auth/cli/poll`, { method: "POST", body: JSON.stringify({ state: "s", pollSecret: "p" }) });
    expect(poll.status).not.toBe(429);
    clock.advance(1_000);
    expect((await login()).status).toBe(302);
  });

  it("refuses new sign-ins while the cap is under way, and takes them again once those expire", async () => {
    clock.advance(10_000);
    const { rows } = await database.pool.query("SELECT count(*)::int AS n FROM sign_in_attempts WHERE expires_at > $1", [clock.now()]);
    expect(rows[0].n).toBe(3);
    const full = await login();
    expect(full.status).toBe(503);
    expect(await full.text()).toContain("too many sign-ins are under way");
    clock.advance(11 * 60_000);
    expect((await login()).status).toBe(302);
  });
});
