import { describe, expect } from "vitest";
import { allScopes, roles, scopesOf } from "../../../src/access/roles.js";
import { rpcRules } from "../../../src/api/access/rpc-scopes.js";
import { testWith } from "../../helpers/fixtures.js";
import type { TestServer } from "../../helpers/server.js";
import { adminRpcs } from "./admin-services.js";
import { callRpc, createToken } from "./access-fixtures.js";

const test = testWith({});

const roleEnum = { viewer: "ROLE_VIEWER", editor: "ROLE_EDITOR", admin: "ROLE_ADMIN", owner: "ROLE_OWNER" } as const;

/** Calls every admin RPC with an empty request and these headers: which ones the gate refused, and how. */
async function sweep(server: TestServer, headers: Record<string, string>) {
  const answers = new Map<string, { code: string | undefined; message: string }>();
  for (const rpc of adminRpcs) {
    const answer = await callRpc(server, rpc.key, {}, headers);
    answers.set(rpc.key, { code: answer.code, message: answer.message });
  }
  return answers;
}

/** Whether the answer is the gate's scope refusal naming `scope`. */
const refusedFor = (answer: { code: string | undefined; message: string }, scope: string) =>
  answer.code === "permission_denied" && answer.message.includes(scope);

describe("every admin RPC under every role and scope", () => {
  test("a token of each role reaches exactly the RPCs whose scope its role holds", async ({ server }) => {
    for (const role of roles) {
      const token = await createToken(server, { name: `${role} token`, role: roleEnum[role] });
      const answers = await sweep(server, token.bearer);
      const held = scopesOf(role);
      for (const [key, rule] of Object.entries(rpcRules)) {
        const answer = answers.get(key)!;
        const allowed = rule.scope === "authenticated" || held.has(rule.scope);
        expect(answer.code, `${role} calling ${key}: ${answer.message}`).not.toBe("unauthenticated");
        if (allowed) expect(refusedFor(answer, String(rule.scope)), `${role} should reach ${key}: ${answer.message}`).toBe(false);
        else
          expect(
            refusedFor(answer, rule.scope),
            `${role} should be refused ${key} naming ${rule.scope}: ${answer.code} ${answer.message}`,
          ).toBe(true);
      }
    }
  });

  test("a token of one scope reaches only that scope's RPCs and the ones any principal may call", async ({ server }) => {
    for (const scope of allScopes) {
      const token = await createToken(server, { name: `${scope} token`, scopes: [scope] });
      const answers = await sweep(server, token.bearer);
      for (const [key, rule] of Object.entries(rpcRules)) {
        const answer = answers.get(key)!;
        if (rule.scope === "authenticated" || rule.scope === scope) {
          expect(
            answer.code === "permission_denied" && answer.message.includes("lacks the scope"),
            `${scope} token calling ${key}: ${answer.message}`,
          ).toBe(false);
        } else {
          expect(refusedFor(answer, rule.scope), `${scope} token should be refused ${key}: ${answer.code} ${answer.message}`).toBe(true);
        }
      }
    }
  });

  test("a write key, no credential and a revoked or expired token open no admin RPC", async ({ server }) => {
    const source = await server.createSource();
    const revoked = await createToken(server, { role: "ROLE_OWNER" });
    expect((await callRpc(server, "TokenService/RevokeToken", { id: revoked.id })).status).toBe(200);
    const expiring = await createToken(server, { role: "ROLE_OWNER", expireTime: new Date(Date.now() + 60 * 60_000).toISOString() });
    await server.pool.query("UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE id = $1", [expiring.id]);
    const cases: Array<[string, Record<string, string>, RegExp]> = [
      ["a write key", { authorization: `Bearer ${source.writeKey}` }, /admin token or API token required/],
      ["a write key as Basic", { authorization: `Basic ${Buffer.from(`${source.writeKey}:`).toString("base64")}` }, /required/],
      ["no credential", {}, /admin token required/],
      ["a revoked token", revoked.bearer, /was revoked/],
      ["an expired token", expiring.bearer, /expired/],
      [
        "a token with a wrong checksum",
        { authorization: `Bearer ${revoked.secret.slice(0, -1)}${revoked.secret.endsWith("A") ? "B" : "A"}` },
        /required/,
      ],
    ];
    for (const [what, headers, message] of cases) {
      const answers = await sweep(server, headers);
      for (const [key, answer] of answers) {
        expect(answer.code, `${what} calling ${key}`).toBe("unauthenticated");
        expect(answer.message, `${what} calling ${key}`).toMatch(message);
      }
    }
  });

  test("a token's use is recorded with its address, and the admin token's scope check names the RPC's scope", async ({ server }) => {
    const viewer = await createToken(server, { role: "ROLE_VIEWER" });
    const refused = await callRpc(server, "SourceService/CreateSource", { source: { name: "x" } }, viewer.bearer);
    expect(refused.code).toBe("permission_denied");
    expect(refused.message).toContain("sources:write");
    const { rows } = await server.pool.query("SELECT last_used_at, last_used_address FROM api_tokens WHERE id = $1", [viewer.id]);
    expect(rows[0].last_used_at).toBeInstanceOf(Date);
    expect(rows[0].last_used_address).toMatch(/127\.0\.0\.1/);
  });
});
