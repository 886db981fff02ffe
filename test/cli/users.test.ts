import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import { cliEnv, waypost, waypostJson } from "./support.js";

// `waypost users` against a real server. Users come from the identity
// provider's sign-ins; the test inserts their rows directly.

let env: NodeJS.ProcessEnv;

const test = testWith();
test.beforeAll(async ({ server }) => {
  env = cliEnv(server);
});

interface UserJson {
  id: string;
  email: string;
  role: string;
  roleFromClaim?: boolean;
  sourceIds?: string[];
  disabled?: boolean;
}

const header = /^ID\s+EMAIL\s+NAME\s+ROLE\s+SOURCES\s+DISABLED\s+CREATED\s+LAST SIGN-IN$/;

test("users list, update (only what the flags name), revoke-sessions", async ({ server, pool }) => {
  const empty = await waypost(["users", "list"], env);
  expect(empty.code, empty.stderr).toBe(0);
  expect(empty.stdout).toBe("ID  EMAIL  NAME  ROLE  SOURCES  DISABLED  CREATED  LAST SIGN-IN\n");
  expect(await waypostJson(["users", "list"], env)).toEqual({});

  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO users (issuer, subject, email, name, role) VALUES
       ('https://idp.example', 'ana', 'ana@example.com', 'Ana', 'viewer'),
       ('https://idp.example', 'bo', 'bo@example.com', '', 'editor')
     RETURNING id`,
  );
  const [ana, bo] = rows.map((row) => row.id) as [string, string];
  const list = await waypost(["users", "list"], env);
  expect(list.stdout.split("\n")[0]).toMatch(header);
  expect(list.stdout).toMatch(new RegExp(`^${ana}\\s+ana@example\\.com\\s+Ana\\s+viewer\\s+all\\s+no\\s+\\d{4}-\\S+Z\\s+-$`, "m"));
  expect(list.stdout).toMatch(new RegExp(`^${bo}\\s+bo@example\\.com\\s+-\\s+editor\\s+all\\s+no\\s`, "m"));

  const promoted = await waypost(["users", "update", ana, "--role", "editor"], env);
  expect(promoted.code, promoted.stderr).toBe(0);
  expect(promoted.stdout).toMatch(/^role:\s+editor$/m);
  expect(promoted.stdout).toMatch(/^disabled:\s+no$/m);

  // Each update changes only its flags' fields: the role stays editor.
  const source = await server.createSource("ana's");
  const limited = await waypostJson<{ user: UserJson }>(["users", "update", ana, "--source", source.id], env);
  expect(limited.user).toMatchObject({ role: "ROLE_EDITOR", sourceIds: [source.id] });
  const disabled = await waypostJson<{ user: UserJson }>(["users", "update", ana, "--disable"], env);
  expect(disabled.user).toMatchObject({ role: "ROLE_EDITOR", sourceIds: [source.id], disabled: true });
  const listed = await waypost(["users", "list"], env);
  expect(listed.stdout).toMatch(new RegExp(`^${ana}\\s+ana@example\\.com\\s+Ana\\s+editor\\s+${source.id}\\s+yes\\s`, "m"));
  expect(listed.stdout).toMatch(new RegExp(`^${bo}\\s+bo@example\\.com\\s+-\\s+editor\\s+all\\s+no\\s`, "m"));

  const back = await waypostJson<{ user: UserJson }>(["users", "update", ana, "--enable", "--all-sources"], env);
  expect(back.user.disabled).toBeUndefined();
  expect(back.user.sourceIds).toBeUndefined();
  expect(back.user.role).toBe("ROLE_EDITOR");

  // Signed in twice: both sessions end; an ended one is not counted again.
  for (const _ of [1, 2]) {
    await pool.query(
      `INSERT INTO user_sessions (id_hash, user_id, csrf_token, expires_at) VALUES ($1, $2, 'csrf', now() + interval '1 hour')`,
      [randomBytes(32), bo],
    );
  }
  const revoked = await waypost(["users", "revoke-sessions", bo], env);
  expect(revoked).toMatchObject({ code: 0, stdout: `revoked 2 sessions of user ${bo}\n` });
  expect(await waypostJson(["users", "revoke-sessions", bo], env)).toEqual({});

  // The audit log has the changes, with what changed.
  const audit = await waypost(["audit", "--target", ana], env);
  expect(audit.stdout).toMatch(/user\.update\s+user:\S+\s+ok\s+role: "ROLE_VIEWER" → "ROLE_EDITOR"/);
  expect(audit.stdout).toMatch(/user\.update\s+user:\S+\s+ok\s+disabled: \(none\) → true/);
});

test("users update refused: an unknown user, a role from the provider's groups, a viewer's token", async ({ server, pool }) => {
  const missing = await waypost(["users", "update", "00000000-0000-4000-8000-000000000404", "--disable"], env);
  expect(missing.code).toBe(1);
  expect(missing.stderr).toMatch(/^waypost: not_found: /);

  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO users (issuer, subject, email, role, role_from_claim) VALUES ('https://idp.example', 'cy', 'cy@example.com', 'admin', true)
     RETURNING id`,
  );
  const cy = rows[0]!.id;
  expect((await waypost(["users", "list"], env)).stdout).toMatch(
    new RegExp(`^${cy}\\s+cy@example\\.com\\s+-\\s+admin \\(from claim\\)\\s`, "m"),
  );
  const claimed = await waypost(["users", "update", cy, "--role", "viewer"], env);
  expect(claimed.code).toBe(1);
  expect(claimed.stderr).toMatch(/^waypost: failed_precondition: .*identity provider/);
  // Disabling does not touch the role: allowed.
  expect((await waypostJson<{ user: UserJson }>(["users", "update", cy, "--disable"], env)).user).toMatchObject({ disabled: true });

  const viewer = await waypostJson<{ secret: string }>(["tokens", "create", "--name", "reader", "--role", "viewer"], env);
  const asViewer = cliEnv(server, { WAYPOST_ADMIN_TOKEN: viewer.secret });
  const [list, update] = await Promise.all([waypost(["users", "list"], asViewer), waypost(["users", "update", cy, "--enable"], asViewer)]);
  expect(list.code).toBe(1);
  expect(list.stderr).toMatch(/^waypost: permission_denied: .*users:read/);
  expect(update.code).toBe(1);
  expect(update.stderr).toMatch(/^waypost: permission_denied: .*users:write/);
});
