import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { FetchBrowser, type Hop } from "../helpers/fetch-browser.js";
import { testAdminToken } from "../helpers/server.js";
import { type SignInStand, startSignInStand } from "../sign-in/support.js";
import { cliEnv, startWaypost, waypost } from "./support.js";

// `waypost login` run as users run it (the built CLI), against a real
// Waypost with sign-in and a real provider; the browser's part is done by
// fetch through the provider's forms. Every request the CLI makes goes
// through a recording proxy, so the test sees which token each command sent.

interface Recorded {
  method: string;
  path: string;
  authorization: string | undefined;
}

/** A reverse proxy to Waypost that records each request's path and Authorization header. */
async function startRecordingProxy(): Promise<{ url: string; target: string; requests: Recorded[]; close(): Promise<void> }> {
  const requests: Recorded[] = [];
  const proxy = {
    url: "",
    target: "",
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = http.createServer((req, res) => {
    requests.push({ method: req.method ?? "", path: (req.url ?? "").split("?")[0]!, authorization: req.headers.authorization });
    const target = new URL(req.url ?? "/", proxy.target);
    const forward = http.request(target, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on("error", () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}

let stand: SignInStand;
let proxy: Awaited<ReturnType<typeof startRecordingProxy>>;

beforeAll(async () => {
  proxy = await startRecordingProxy();
  stand = await startSignInStand({
    env: { WAYPOST_OIDC_ALLOWED_DOMAINS: "example.com" },
    accounts: [
      { sub: "ada", email: "ada@example.com", name: "Ada" },
      { sub: "outsider", email: "outsider@example.org" },
    ],
    // Waypost answers through the proxy, so it sends the browser back through the proxy.
    extraRedirectUris: () => [`${proxy.url}/auth/callback`],
  });
  proxy.target = stand.server.url;
});
afterAll(async () => {
  await stand?.close();
  await proxy?.close();
});

/** The environment of a CLI with its own config directory, and no token of its own. */
function loginEnv(): { env: NodeJS.ProcessEnv; configDir: string } {
  const configDir = path.join(mkdtempSync(path.join(tmpdir(), "waypost-config-")), "waypost");
  return { env: cliEnv(undefined, { WAYPOST_CONFIG_DIR: configDir, WAYPOST_URL: proxy.url }), configDir };
}

/** The person's part: the printed URL, the confirmation, the provider's forms. */
async function signInInBrowser(loginUrl: string, login: string): Promise<Hop> {
  const browser = new FetchBrowser();
  const isCallback = (hop: Hop) => hop.url.startsWith(`${proxy.url}/auth/callback`);
  const [page] = await browser.follow(loginUrl);
  expect(page!.status).toBe(200);
  const hops = await browser.follow(
    `${proxy.url}/auth/login`,
    {
      method: "POST",
      body: new URLSearchParams({ cli: new URL(loginUrl).searchParams.get("cli")! }),
      headers: { origin: proxy.url, "content-type": "application/x-www-form-urlencoded" },
    },
    isCallback,
  );
  const all = await browser.completeProviderInteractions(hops, login, stand.provider.issuer, isCallback);
  return all.find(isCallback)!;
}

async function runLogin(env: NodeJS.ProcessEnv, login: string) {
  const cli = startWaypost(["login", "--no-browser"], env);
  const line = await cli.waitForLine((text) => text.includes("/auth/login?cli="));
  const loginUrl = line.trim();
  expect(loginUrl.startsWith(`${proxy.url}/auth/login?cli=`)).toBe(true);
  const callback = await signInInBrowser(loginUrl, login);
  const code = await cli.exited;
  return { cli, code, callback };
}

const listSourcesHeader = () =>
  proxy.requests.filter((request) => request.path === "/waypost.v1.SourceService/ListSources").at(-1)?.authorization;

describe("waypost login", () => {
  let env: NodeJS.ProcessEnv;
  let configDir: string;
  let token: string;

  test("signs in through the browser and keeps the token in a file only the user can read", async () => {
    ({ env, configDir } = loginEnv());
    const { cli, code, callback } = await runLogin(env, "ada");
    expect(callback.status).toBe(200);
    expect(code, cli.lines.join("\n")).toBe(0);
    expect(cli.lines.join("\n")).toMatch(/it shows the code [A-Z2-9]{4}-[A-Z2-9]{4}/);
    expect(cli.lines.at(-1)).toMatch(new RegExp(`^Signed in to ${proxy.url}: token wpt_\\w{6}… kept in .*credentials\\.json until `));

    const file = path.join(configDir, "credentials.json");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(configDir).mode & 0o777).toBe(0o700);
    const stored = JSON.parse(readFileSync(file, "utf8"));
    const login = stored.servers[proxy.url];
    expect(login.token).toMatch(/^wpt_/);
    expect(Date.parse(login.expiresAt) - Date.now()).toBeGreaterThan(11 * 3600_000);
    token = login.token;
    const { rows } = await stand.pool.query("SELECT role, user_id FROM api_tokens WHERE prefix = $1", [token.slice(0, 10)]);
    expect(rows).toHaveLength(1);
  });

  test("the kept token authenticates the next command against that server", async () => {
    const listed = await waypost(["sources", "list"], env);
    expect(listSourcesHeader()).toBe(`Bearer ${token}`);
    expect(listed.code, listed.stderr).toBe(0);
  });

  test("--token and WAYPOST_ADMIN_TOKEN come first", async () => {
    const withEnv = await waypost(["sources", "list"], { ...env, WAYPOST_ADMIN_TOKEN: testAdminToken });
    expect(withEnv.code, withEnv.stderr).toBe(0);
    expect(listSourcesHeader()).toBe(`Bearer ${testAdminToken}`);
    await waypost(["sources", "list", "--token", "wpt_flag"], env);
    expect(listSourcesHeader()).toBe("Bearer wpt_flag");
  });

  test("an expired kept token is passed over for the data directory's admin token file", async () => {
    const file = path.join(configDir, "credentials.json");
    const stored = JSON.parse(readFileSync(file, "utf8"));
    stored.servers[proxy.url].expiresAt = new Date(Date.now() - 1000).toISOString();
    writeFileSync(file, JSON.stringify(stored));
    writeFileSync(path.join(env.WAYPOST_DATA_DIR!, "admin-token"), `${testAdminToken}\n`);
    const listed = await waypost(["sources", "list"], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listSourcesHeader()).toBe(`Bearer ${testAdminToken}`);
  });

  test("waypost logout revokes it on the server and forgets it", async () => {
    const out = await waypost(["logout"], env);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toBe(`Revoked and forgot the token for ${proxy.url}.\n`);
    const { rows } = await stand.server.pool.query("SELECT revoked_at FROM api_tokens WHERE name LIKE 'waypost login%'");
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((row) => row.revoked_at instanceof Date)).toBe(true);
    const reused = await waypost(["sources", "list", "--token", token], env);
    expect(reused.code).toBe(1);
    expect(reused.stderr).toContain("revoked");
    expect(JSON.parse(readFileSync(path.join(configDir, "credentials.json"), "utf8")).servers).toEqual({});
    const again = await waypost(["logout"], env);
    expect(again.stdout).toBe(`No token was kept for ${proxy.url}.\n`);
    const { env: bare } = loginEnv();
    const missing = await waypost(["sources", "list"], bare);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("run waypost login");
  });
});

test("a refused sign-in ends waypost login with the reason to look for", async () => {
  const { env, configDir } = loginEnv();
  const { cli, code, callback } = await runLogin(env, "outsider");
  expect(callback.status).toBe(403);
  expect(callback.body).toContain("email domain example.org is not allowed");
  expect(code).toBe(1);
  expect(cli.stderr()).toContain("the sign-in was refused or expired (the browser says why)");
  expect(() => statSync(path.join(configDir, "credentials.json"))).toThrow();
});

test("Ctrl-C while waiting ends it cleanly", async () => {
  const { env } = loginEnv();
  const cli = startWaypost(["login", "--no-browser"], env);
  await cli.waitForLine((text) => text.includes("/auth/login?cli="));
  cli.child.kill("SIGINT");
  expect(await cli.exited).toBe(1);
  expect(cli.stderr()).toContain("login cancelled");
});
