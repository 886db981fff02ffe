import { createHash, randomBytes } from "node:crypto";
import { describe, expect } from "vitest";
import { hashTokenSecret, newTokenSecret, tokenDisplayPrefix } from "../../../src/access/token-secret.js";
import { testWith } from "../../helpers/fixtures.js";
import type { TestServer } from "../../helpers/server.js";
import { callRpc, okRpc } from "./access-fixtures.js";

// Console sessions (a cookie and its CSRF token) and people's own tokens,
// as the RPC gate sees them. The sign-in that makes a session is tested
// with a real provider in test/sign-in/.

const test = testWith({ server: { config: { role: "api" } } });

async function insertUser(server: TestServer, email: string, role: string): Promise<string> {
  const { rows } = await server.pool.query(
    "INSERT INTO users (issuer, subject, email, role) VALUES ('https://idp.example', $1, $1, $2) RETURNING id",
    [email, role],
  );
  return rows[0].id as string;
}

async function insertSession(server: TestServer, userId: string) {
  const id = randomBytes(32).toString("base64url");
  const csrf = randomBytes(16).toString("hex");
  await server.pool.query(
    "INSERT INTO user_sessions (id_hash, user_id, csrf_token, expires_at) VALUES ($1, $2, $3, now() + interval '1 hour')",
    [createHash("sha256").update(id).digest(), userId, csrf],
  );
  const host = new URL(server.url).host;
  return { cookie: { cookie: `other=1; waypost_session=${id}` }, csrf, host, id };
}

/** A person's own token, as the sign-in's CLI path makes them. */
async function insertPersonToken(server: TestServer, userId: string, role: string) {
  const secret = newTokenSecret();
  await server.pool.query(
    "INSERT INTO api_tokens (name, secret_hash, prefix, role, user_id, created_by) VALUES ('mine', $1, $2, $3, $4, 'test')",
    [hashTokenSecret(secret), tokenDisplayPrefix(secret), role, userId],
  );
  return { authorization: `Bearer ${secret}` };
}

describe("console sessions", () => {
  test("need the CSRF token and our own origin; revocation and idleness end them at the next request", async ({ server }) => {
    const userId = await insertUser(server, "ed@example.org", "editor");
    const session = await insertSession(server, userId);
    const withCsrf = { ...session.cookie, "x-csrf-token": session.csrf };

    const noCsrf = await callRpc(server, "SourceService/CreateSource", { source: { name: "x" } }, session.cookie);
    expect(noCsrf.code).toBe("permission_denied");
    expect(noCsrf.message).toContain("X-CSRF-Token");
    const wrongCsrf = await callRpc(server, "SourceService/ListSources", {}, { ...session.cookie, "x-csrf-token": "0".repeat(32) });
    expect(wrongCsrf.code).toBe("permission_denied");
    const otherOrigin = await callRpc(
      server,
      "SourceService/CreateSource",
      { source: { name: "x" } },
      { ...withCsrf, origin: "https://evil.example" },
    );
    expect(otherOrigin.code).toBe("permission_denied");
    expect(otherOrigin.message).toContain("evil.example");

    const created = await callRpc(
      server,
      "SourceService/CreateSource",
      { source: { name: "by session" } },
      { ...withCsrf, origin: `http://${session.host}` },
    );
    expect(created.status, created.message).toBe(200);
    const me = await okRpc(server, "AccessService/GetCurrentPrincipal", {}, withCsrf);
    expect(me.principal).toMatchObject({ kind: "user", id: userId, name: "ed@example.org", role: "ROLE_EDITOR", csrfToken: session.csrf });
    const { rows } = await server.pool.query("SELECT actor_kind, actor_id, actor_name FROM audit_events WHERE action = 'source.create'");
    expect(rows).toEqual([{ actor_kind: "user", actor_id: userId, actor_name: "ed@example.org" }]);

    // An owner signs the user out everywhere: the very next request is refused.
    await okRpc(server, "AccessService/RevokeSessions", { userId });
    const revoked = await callRpc(server, "SourceService/ListSources", {}, withCsrf);
    expect(revoked.code).toBe("unauthenticated");

    const idle = await insertSession(server, userId);
    await server.pool.query("UPDATE user_sessions SET last_seen_at = now() - interval '2 hours' WHERE id_hash = $1", [
      createHash("sha256").update(idle.id).digest(),
    ]);
    expect((await callRpc(server, "SourceService/ListSources", {}, { ...idle.cookie, "x-csrf-token": idle.csrf })).code).toBe(
      "unauthenticated",
    );

    const garbage = await callRpc(server, "SourceService/ListSources", {}, { cookie: `waypost_session=${"x".repeat(9_000)}` });
    expect(garbage.code).toBe("unauthenticated");
  });

  test("a viewer's session reads but does not change; an owner manages users", async ({ server }) => {
    const viewerId = await insertUser(server, "vi@example.org", "viewer");
    const viewer = await insertSession(server, viewerId);
    const headers = { ...viewer.cookie, "x-csrf-token": viewer.csrf };
    expect((await callRpc(server, "DestinationService/ListDestinations", {}, headers)).status).toBe(200);
    const refused = await callRpc(server, "DestinationService/CreateDestination", { destination: { name: "d" } }, headers);
    expect(refused.code).toBe("permission_denied");
    expect(refused.message).toContain("destinations:write");

    const users = await okRpc(server, "AccessService/ListUsers", {});
    expect((users.users as Array<{ email: string }>).map((user) => user.email)).toContain("vi@example.org");
    const promoted = await okRpc(server, "AccessService/UpdateUser", { user: { id: viewerId, role: "ROLE_EDITOR" }, updateMask: "role" });
    expect((promoted.user as { role: string }).role).toBe("ROLE_EDITOR");
    expect((await callRpc(server, "SourceService/CreateSource", { source: { name: "now allowed" } }, headers)).status).toBe(200);
    const badMask = await callRpc(server, "AccessService/UpdateUser", { user: { id: viewerId, email: "x" }, updateMask: "email" });
    expect(badMask.code).toBe("invalid_argument");
    await server.pool.query("UPDATE users SET role_from_claim = true WHERE id = $1", [viewerId]);
    const fromClaim = await callRpc(server, "AccessService/UpdateUser", { user: { id: viewerId, role: "ROLE_OWNER" }, updateMask: "role" });
    expect(fromClaim.code).toBe("failed_precondition");
    await okRpc(server, "AccessService/UpdateUser", { user: { id: viewerId, disabled: true }, updateMask: "disabled" });
    expect((await callRpc(server, "SourceService/ListSources", {}, headers)).code).toBe("unauthenticated");
  });
});

describe("owners", () => {
  test("the last enabled owner can be neither demoted nor disabled", async ({ server }) => {
    const first = await insertUser(server, "own1@example.org", "owner");
    for (const change of [
      { user: { id: first, role: "ROLE_ADMIN" }, updateMask: "role" },
      { user: { id: first, disabled: true }, updateMask: "disabled" },
    ]) {
      const refused = await callRpc(server, "AccessService/UpdateUser", change);
      expect(refused.code).toBe("failed_precondition");
      expect(refused.message).toContain("last owner");
    }
    const second = await insertUser(server, "own2@example.org", "viewer");
    await okRpc(server, "AccessService/UpdateUser", { user: { id: second, role: "ROLE_OWNER" }, updateMask: "role" });
    const demoted = await okRpc(server, "AccessService/UpdateUser", { user: { id: first, role: "ROLE_ADMIN" }, updateMask: "role" });
    expect((demoted.user as { role: string }).role).toBe("ROLE_ADMIN");
  });
});

describe("people's tokens", () => {
  test("follow their person: capped by the current role, refused once the person is disabled", async ({ server }) => {
    const userId = await insertUser(server, "ad@example.org", "admin");
    const token = await insertPersonToken(server, userId, "admin");
    expect((await callRpc(server, "AuditService/ListAuditEvents", {}, token)).status).toBe(200);
    await server.pool.query("UPDATE users SET role = 'viewer' WHERE id = $1", [userId]);
    const capped = await callRpc(server, "AuditService/ListAuditEvents", {}, token);
    expect(capped.code).toBe("permission_denied");
    expect((await callRpc(server, "SourceService/ListSources", {}, token)).status).toBe(200);
    const own = await okRpc(server, "TokenService/ListTokens", {}, token);
    expect((own.tokens as Array<{ userId: string }>).every((item) => item.userId === userId)).toBe(true);
    await server.pool.query("UPDATE users SET disabled = true WHERE id = $1", [userId]);
    const disabled = await callRpc(server, "SourceService/ListSources", {}, token);
    expect(disabled.code).toBe("unauthenticated");
    expect(disabled.message).toContain("disabled");
  });

  test("a person makes and revokes their own tokens without tokens:write, but not service accounts'", async ({ server }) => {
    const userId = await insertUser(server, "ve@example.org", "viewer");
    const session = await insertSession(server, userId);
    const headers = { ...session.cookie, "x-csrf-token": session.csrf };
    const made = await okRpc(server, "TokenService/CreateToken", { token: { name: "laptop", role: "ROLE_VIEWER" } }, headers);
    expect(made.secret).toMatch(/^wpt_[0-9A-Za-z]{36}$/);
    expect((made.token as { userId: string; serviceAccount: boolean }).userId).toBe(userId);
    const service = await callRpc(
      server,
      "TokenService/CreateToken",
      { token: { name: "ci", role: "ROLE_VIEWER", serviceAccount: true } },
      headers,
    );
    expect(service.code).toBe("permission_denied");
    expect(service.message).toContain("tokens:write");
    const other = await okRpc(server, "TokenService/CreateToken", { token: { name: "other", role: "ROLE_VIEWER", serviceAccount: true } });
    const revokeOther = await callRpc(server, "TokenService/RevokeToken", { id: (other.token as { id: string }).id }, headers);
    expect(revokeOther.code).toBe("not_found");
    const revoked = await okRpc(server, "TokenService/RevokeToken", { id: (made.token as { id: string }).id }, headers);
    expect((revoked.token as { revokeTime?: string }).revokeTime).toBeDefined();
    const listed = await okRpc(server, "TokenService/ListTokens", { includeInactive: true }, headers);
    expect(JSON.stringify(listed)).not.toContain(made.secret as string);
  });
});
