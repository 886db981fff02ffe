import { expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import { cliEnv, waypost, waypostJson } from "./support.js";

// `waypost tokens` and `waypost whoami` against a real server: a viewer
// token made with the admin token reads but cannot change, shows in the
// list by its prefix only, and stops working when revoked.

let env: NodeJS.ProcessEnv;

const test = testWith();
test.beforeAll(async ({ server }) => {
  env = cliEnv(server);
});

interface TokenJson {
  id: string;
  name: string;
  role?: string;
  scopes?: string[];
  sourceIds?: string[];
  serviceAccount?: boolean;
  prefix: string;
  expireTime?: string;
  lastUseTime?: string;
  lastUseAddress?: string;
  revokeTime?: string;
}

test("--help on every level; usage errors exit 2 before any request", async () => {
  const [top, tokens, create, users, update] = await Promise.all([
    waypost(["--help"], env),
    waypost(["tokens", "--help"], env),
    waypost(["tokens", "create", "--help"], env),
    waypost(["users", "--help"], env),
    waypost(["users", "update", "--help"], env),
  ]);
  for (const command of ["tokens", "users", "audit", "whoami"]) expect(top.stdout).toMatch(new RegExp(`^  ${command}\\b`, "m"));
  expect(tokens.stdout).toMatch(/create[\s\S]*list[\s\S]*revoke/);
  for (const flag of ["--name", "--role", "--scope", "--source", "--expires", "--service-account", "--token", "--json"]) {
    expect(create.stdout).toContain(flag);
  }
  expect(users.stdout).toMatch(/list[\s\S]*update[\s\S]*revoke-sessions/);
  for (const flag of ["--role", "--source", "--all-sources", "--disable", "--enable"]) expect(update.stdout).toContain(flag);
  for (const help of [top, tokens, create, users, update]) expect(help.code).toBe(0);

  // Nothing listens here: a usage error must be found before any request.
  const offline = cliEnv(undefined, { WAYPOST_URL: "http://127.0.0.1:1", WAYPOST_ADMIN_TOKEN: "unused" });
  const usage = await Promise.all([
    waypost(["tokens"], offline),
    waypost(["tokens", "create", "--role", "viewer"], offline),
    waypost(["tokens", "create", "--name", "x"], offline),
    waypost(["tokens", "create", "--name", "x", "--role", "viewer", "--scope", "sources:read"], offline),
    waypost(["tokens", "create", "--name", "x", "--role", "boss"], offline),
    waypost(["tokens", "create", "--name", "x", "--scope", "sources:read,sources:delete"], offline),
    waypost(["tokens", "create", "--name", "x", "--role", "viewer", "--expires", "next week"], offline),
    waypost(["tokens", "revoke"], offline),
    waypost(["users", "update", "00000000-0000-4000-8000-000000000001"], offline),
    waypost(["users", "update", "00000000-0000-4000-8000-000000000001", "--disable", "--enable"], offline),
    waypost(["users", "update", "00000000-0000-4000-8000-000000000001", "--source", "x", "--all-sources"], offline),
    waypost(["users", "update", "00000000-0000-4000-8000-000000000001", "--role", "root"], offline),
    waypost(["audit", "--limit", "0"], offline),
    waypost(["audit", "--since", "last tuesday"], offline),
  ]);
  for (const result of usage) expect(result.code, result.stderr).toBe(2);
  expect(usage[1]!.stderr).toContain("--name");
  expect(usage[2]!.stderr).toContain("--role ROLE or --scope SCOPE");
  expect(usage[3]!.stderr).toContain("not both");
  expect(usage[4]!.stderr).toContain('--role: "boss" is not a role (one of viewer, editor, admin, owner)');
  expect(usage[5]!.stderr).toContain('--scope: "sources:delete" is not a scope');
  expect(usage[6]!.stderr).toContain("--expires");
  expect(usage[8]!.stderr).toContain("nothing to change");
  expect(usage[11]!.stderr).toContain('--role: "root"');
  expect(usage[13]!.stderr).toContain("--since");
});

test("whoami: the admin token is an owner with every scope", async () => {
  const text = await waypost(["whoami"], env);
  expect(text.code).toBe(0);
  expect(text.stdout).toMatch(/^kind:\s+admin-token$/m);
  expect(text.stdout).toMatch(/^name:\s+admin token$/m);
  expect(text.stdout).toMatch(/^role:\s+owner$/m);
  expect(text.stdout).toMatch(/^scopes:\s+.*users:write/m);
  expect(text.stdout).toMatch(/^sources:\s+all$/m);
  const json = await waypostJson<{ principal: { kind: string; role: string; scopes: string[] } }>(["whoami"], env);
  expect(json.principal).toMatchObject({ kind: "admin-token", role: "ROLE_OWNER" });
  expect(json.principal.scopes).toContain("tokens:write");
});

test("a viewer token: made once, reads, cannot change, listed by its prefix, refused once revoked", async ({ server }) => {
  const readable = await server.createSource("readable");
  const created = await waypost(["tokens", "create", "--name", "dashboards", "--role", "viewer"], env);
  expect(created.code, created.stderr).toBe(0);
  const secret = /^secret:\s+(\S+)$/m.exec(created.stdout)?.[1];
  const id = /^id:\s+(\S+)$/m.exec(created.stdout)?.[1];
  expect(secret).toMatch(/^wpt_[0-9A-Za-z]{36}$/);
  expect(created.stdout).toMatch(/^role:\s+viewer$/m);
  expect(created.stdout).toMatch(/^owner:\s+service account$/m);
  expect(created.stdout).toMatch(/^expires:\s+never$/m);
  expect(created.stdout).toContain("shown only this once");
  const prefix = secret!.slice(0, 10);
  expect(created.stdout).toMatch(new RegExp(`^prefix:\\s+${prefix}$`, "m"));

  const viewer = cliEnv(server, { WAYPOST_ADMIN_TOKEN: undefined });
  const [reads, writes, whoami] = await Promise.all([
    waypost(["sources", "list", "--token", secret!], viewer),
    waypost(["sources", "create", "--name", "x", "--token", secret!], viewer),
    waypost(["--token", secret!, "whoami"], viewer),
  ]);
  expect(reads.code, reads.stderr).toBe(0);
  expect(reads.stdout).toMatch(new RegExp(`^${readable.id}\\s+readable\\s`, "m"));
  expect(writes.code).toBe(1);
  expect(writes.stderr).toMatch(/^waypost: permission_denied: .*sources:write/);
  expect(whoami.code).toBe(0);
  expect(whoami.stdout).toMatch(/^kind:\s+token$/m);
  expect(whoami.stdout).toMatch(new RegExp(`^id:\\s+${id}$`, "m"));
  expect(whoami.stdout).toMatch(/^name:\s+dashboards$/m);
  expect(whoami.stdout).toMatch(/^role:\s+viewer$/m);
  const scopes = /^scopes:\s+(.*)$/m.exec(whoami.stdout)![1]!.split(", ");
  expect(scopes).toContain("sources:read");
  expect(scopes).toContain("deliveries:read");
  expect(scopes).not.toContain("sources:write");
  // A viewer may not read the audit log or the users.
  const audit = await waypost(["audit", "--token", secret!], viewer);
  expect(audit.code).toBe(1);
  expect(audit.stderr).toMatch(/^waypost: permission_denied: .*audit:read/);

  const list = await waypost(["tokens", "list"], env);
  expect(list.code).toBe(0);
  expect(list.stdout.split("\n")[0]).toMatch(/^ID\s+NAME\s+PREFIX\s+ROLE\/SCOPES\s+SOURCES\s+EXPIRES\s+LAST USED\s+REVOKED$/);
  // Its use was recorded: when, and from where.
  expect(list.stdout).toMatch(
    new RegExp(`^${id}\\s+dashboards\\s+${prefix}\\s+viewer\\s+all\\s+never\\s+\\S+Z from \\S*127\\.0\\.0\\.1\\s+-$`, "m"),
  );
  expect(list.stdout).not.toContain(secret);
  const listed = await waypost(["tokens", "list", "--json"], env);
  expect(listed.stdout).not.toContain(secret);
  const listedJson = JSON.parse(listed.stdout) as { tokens: TokenJson[] };
  expect(listedJson.tokens.find((t) => t.id === id)).toMatchObject({
    name: "dashboards",
    role: "ROLE_VIEWER",
    prefix,
    serviceAccount: true,
  });

  const revoked = await waypost(["tokens", "revoke", id!], env);
  expect(revoked.code, revoked.stderr).toBe(0);
  expect(revoked.stdout).toMatch(new RegExp(`^revoked token ${id} \\(dashboards\\) at \\d{4}-`));
  const after = await waypost(["sources", "list", "--token", secret!], viewer);
  expect(after.code).toBe(1);
  expect(after.stderr).toMatch(/^waypost: unauthenticated: .*revoked/);
  const active = await waypostJson<{ tokens?: TokenJson[] }>(["tokens", "list"], env);
  expect((active.tokens ?? []).map((t) => t.id)).not.toContain(id);
  const all = await waypost(["tokens", "list", "--all"], env);
  expect(all.stdout).toMatch(new RegExp(`^${id}\\s+dashboards\\s+.*\\s\\d{4}-\\d{2}-\\d{2}T\\S+Z$`, "m"));

  const unknown = await waypost(["tokens", "revoke", "00000000-0000-4000-8000-000000000404"], env);
  expect(unknown.code).toBe(1);
  expect(unknown.stderr).toMatch(/^waypost: not_found: /);
});

test("tokens create: scopes, sources and expiry; --json is the response with the secret", async ({ server }) => {
  const source = await server.createSource("limited");
  const json = await waypostJson<{ token: TokenJson; secret: string }>(
    ["tokens", "create", "--name", "ci", "--scope", "sources:read,deliveries:read", "--source", source.id, "--expires", "30d"],
    env,
  );
  expect(json.secret).toMatch(/^wpt_/);
  expect(json.token).toMatchObject({
    name: "ci",
    scopes: ["sources:read", "deliveries:read"],
    sourceIds: [source.id],
    serviceAccount: true,
  });
  expect(json.token.role).toBeUndefined();
  const days = (Date.parse(json.token.expireTime!) - Date.now()) / 86_400_000;
  expect(days).toBeGreaterThan(29.9);
  expect(days).toBeLessThan(30.1);

  const list = await waypost(["tokens", "list"], env);
  expect(list.stdout).toMatch(
    new RegExp(`^${json.token.id}\\s+ci\\s+wpt_\\S+\\s+sources:read,deliveries:read\\s+${source.id}\\s+\\d{4}-\\S+Z\\s+never\\s+-$`, "m"),
  );
  const whoami = await waypost(["whoami", "--token", json.secret], cliEnv(server, { WAYPOST_ADMIN_TOKEN: undefined }));
  expect(whoami.stdout).toMatch(/^scopes:\s+deliveries:read, sources:read$/m);
  expect(whoami.stdout).toMatch(new RegExp(`^sources:\\s+${source.id}$`, "m"));

  const past = await waypost(["tokens", "create", "--name", "old", "--role", "viewer", "--expires", "2020-01-01T00:00:00Z"], env);
  expect(past.code).toBe(1);
  expect(past.stderr).toMatch(/^waypost: invalid_argument: .*expireTime.*in the past/);
  // The admin token may give no more than it holds, and that is everything; a scoped token may not give more than its own.
  const wider = await waypost(["tokens", "create", "--name", "wider", "--role", "editor", "--token", json.secret], cliEnv(server));
  expect(wider.code).toBe(1);
  expect(wider.stderr).toMatch(/^waypost: permission_denied: /);
});
