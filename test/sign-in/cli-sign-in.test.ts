import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { looksLikeTokenSecret } from "../../src/access/token-secret.js";
import { FetchBrowser, type Hop } from "../helpers/fetch-browser.js";
import { auditRows, type SignInStand, startSignInStand } from "./support.js";

// `waypost login`'s side of the server over HTTP: start, the confirmation
// page, the provider's forms (by fetch), the callback, and the poll that
// hands the token over once.

let stand: SignInStand;

beforeAll(async () => {
  stand = await startSignInStand({
    env: { WAYPOST_OIDC_ROLE_MAPPING: "ops=editor", WAYPOST_CLI_TOKEN_HOURS: "5" },
    accounts: [
      { sub: "first", email: "first@example.com" },
      { sub: "carol", email: "carol@example.com", groups: ["ops"] },
      { sub: "nobody", email: "nobody@example.com", email_verified: false },
    ],
  });
  // Someone else is the first user (and owner), so carol's role comes from her group.
  const browser = new FetchBrowser();
  const hops = await browser.follow(`${stand.server.url}/auth/login`);
  await browser.completeProviderInteractions(hops, "first", stand.provider.issuer);
});
afterAll(async () => {
  await stand?.close();
});

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${stand.server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

async function start(): Promise<{ loginUrl: string; state: string; pollSecret: string; code: string; expiresInSeconds: number }> {
  const response = await post("/auth/cli/start", {}, { "user-agent": "waypost-cli/test" });
  expect(response.status).toBe(200);
  expect(response.headers.get("cache-control")).toBe("no-store");
  return response.json();
}

/** The person's browser: the confirmation page, its button, the provider's forms, the callback's page. */
async function confirmInBrowser(loginUrl: string, login: string): Promise<{ page: Hop; callback: Hop }> {
  const browser = new FetchBrowser();
  const [page] = await browser.follow(loginUrl);
  const state = new URL(loginUrl).searchParams.get("cli")!;
  const isCallback = (hop: Hop) => hop.url.startsWith(`${stand.server.url}/auth/callback`);
  const hops = await browser.follow(
    `${stand.server.url}/auth/login`,
    {
      method: "POST",
      body: new URLSearchParams({ cli: state }),
      headers: { origin: stand.server.url, "content-type": "application/x-www-form-urlencoded" },
    },
    isCallback,
  );
  const all = await browser.completeProviderInteractions(hops, login, stand.provider.issuer, isCallback);
  return { page: page!, callback: all.find(isCallback)! };
}

test("start, sign in in the browser, and the poll hands over a token of the user's role exactly once", async () => {
  const started = await start();
  expect(started.loginUrl).toBe(`${stand.server.url}/auth/login?cli=${started.state}`);
  expect(started.expiresInSeconds).toBe(600);
  expect(started.code).toMatch(/^[A-Z2-9]{4}-[A-Z2-9]{4}$/);

  const pending = await post("/auth/cli/poll", { state: started.state, pollSecret: started.pollSecret });
  expect(pending.status).toBe(202);
  expect(await pending.json()).toEqual({ pending: true });

  const { page, callback } = await confirmInBrowser(started.loginUrl, "carol");
  expect(page.status).toBe(200);
  expect(page.body).toContain(started.code);
  expect(page.body).toContain("Continue only if you ran it yourself");
  expect(callback.status, callback.body).toBe(200);
  expect(callback.body).toContain("Signed in: you can close this tab and return to the terminal");
  // No console session for a CLI sign-in.
  expect(callback.headers.get("set-cookie")).toBeNull();

  const wrongSecret = await post("/auth/cli/poll", { state: started.state, pollSecret: "x".repeat(43) });
  expect(wrongSecret.status).toBe(410);
  const collected = await post("/auth/cli/poll", { state: started.state, pollSecret: started.pollSecret });
  expect(collected.status).toBe(200);
  const { token, expiresAt } = await collected.json();
  expect(token).toMatch(/^wpt_/);
  expect(looksLikeTokenSecret(token)).toBe(true);
  const again = await post("/auth/cli/poll", { state: started.state, pollSecret: started.pollSecret });
  expect(again.status).toBe(410);
  expect((await again.json()).error).toContain("run waypost login again");

  const { rows } = await stand.pool.query("SELECT t.*, u.email FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.prefix = $1", [
    token.slice(0, 10),
  ]);
  expect(rows).toHaveLength(1);
  expect(rows[0]).toMatchObject({ email: "carol@example.com", role: "editor", source_ids: null, created_by: "carol@example.com" });
  expect(rows[0].name).toBe("waypost login (waypost-test-browser/1.0)");
  expect(rows[0].expires_at.toISOString()).toBe(expiresAt);
  const lifetime = rows[0].expires_at.getTime() - rows[0].created_at.getTime();
  expect(Math.abs(lifetime - 5 * 3600_000)).toBeLessThan(60_000);

  const audit = (await auditRows(stand.pool, "session.sign_in")).at(-1);
  expect(audit).toMatchObject({ actor_name: "carol@example.com", target_kind: "token", target_id: rows[0].id, diff: { via: "cli" } });
  expect(JSON.stringify(audit)).not.toContain(token);
});

test("a refused CLI sign-in ends the poll at once", async () => {
  const started = await start();
  const { callback } = await confirmInBrowser(started.loginUrl, "nobody");
  expect(callback.status).toBe(403);
  expect(callback.body).toContain("Run <code>waypost login</code> again");
  const poll = await post("/auth/cli/poll", { state: started.state, pollSecret: started.pollSecret });
  expect(poll.status).toBe(410);
});

describe("the confirmation", () => {
  test("is a same-origin POST: without an Origin, or from another site, it is refused", async () => {
    const started = await start();
    const form = new URLSearchParams({ cli: started.state });
    const formType = { "content-type": "application/x-www-form-urlencoded" };
    const noOrigin = await fetch(`${stand.server.url}/auth/login`, { method: "POST", body: form, headers: formType, redirect: "manual" });
    expect(noOrigin.status).toBe(403);
    const crossSite = await fetch(`${stand.server.url}/auth/login`, {
      method: "POST",
      body: form,
      headers: { ...formType, origin: "http://evil.example", "sec-fetch-site": "cross-site" },
      redirect: "manual",
    });
    expect(crossSite.status).toBe(403);
    // Still usable by the person it was meant for.
    const { callback } = await confirmInBrowser(started.loginUrl, "carol");
    expect(callback.status).toBe(200);
  });

  test("of an unknown or used sign-in says it expired", async () => {
    const page = await fetch(`${stand.server.url}/auth/login?cli=${"B".repeat(43)}`);
    expect(page.status).toBe(410);
    expect(await page.text()).toContain("unknown, expired or already used");
  });
});

describe("bad requests are refused naming the problem", () => {
  test("poll bodies", async () => {
    const cases: Array<[unknown, number, string]> = [
      ["{not json", 400, "the body is not JSON"],
      ["[1]", 400, "the body must be a JSON object"],
      [{ pollSecret: "x".repeat(43) }, 400, "state:"],
      [{ state: "A".repeat(43), pollSecret: 5 }, 400, "pollSecret:"],
      [{ state: "A".repeat(43), pollSecret: "x".repeat(5000) }, 413, "over the limit of 4096 bytes"],
    ];
    for (const [body, status, error] of cases) {
      const response = await post("/auth/cli/poll", body);
      expect(response.status, JSON.stringify(body).slice(0, 40)).toBe(status);
      expect((await response.json()).error).toContain(error);
    }
    const text = await post("/auth/cli/poll", "state=x", { "content-type": "text/plain" });
    expect(text.status).toBe(415);
  });

  test("wrong methods", async () => {
    const get = await fetch(`${stand.server.url}/auth/cli/start`);
    expect(get.status).toBe(405);
    expect((await get.json()).error).toBe("GET is not allowed on /auth/cli/start: use POST");
  });
});
