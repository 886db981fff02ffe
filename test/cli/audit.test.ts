import { describe, expect } from "vitest";
import { diffSummary } from "../../src/cli/commands/audit.js";
import { testWith } from "../helpers/fixtures.js";
import { cliEnv, waypost, tableRows, waypostJson } from "./support.js";

// `waypost audit` against a real server: the changes the CLI makes, newest
// first, by the admin token, filtered, and never a token's secret.

let env: NodeJS.ProcessEnv;

const test = testWith();
test.beforeAll(async ({ server }) => {
  env = cliEnv(server);
});

interface EventJson {
  id: string;
  actorKind: string;
  actorId: string;
  actorName: string;
  action: string;
  targetKind?: string;
  targetId?: string;
  diff?: Record<string, unknown>;
  outcome: string;
}

test("audit: every change newest first, by the admin token, filtered by action, target and actor, never a secret", async () => {
  const source = await waypostJson<{ source: { id: string; writeKey: string } }>(["sources", "create", "--name", "audited"], env);
  const renamed = await waypost(["sources", "update", source.source.id, "--name", "renamed"], env);
  expect(renamed.code, renamed.stderr).toBe(0);
  const token = await waypostJson<{ token: { id: string }; secret: string }>(["tokens", "create", "--name", "ci", "--role", "viewer"], env);
  const revoked = await waypost(["tokens", "revoke", token.token.id], env);
  expect(revoked.code, revoked.stderr).toBe(0);

  const all = await waypost(["audit"], env);
  expect(all.code, all.stderr).toBe(0);
  expect(all.stdout.split("\n")[0]).toMatch(/^TIME\s+ACTOR\s+ACTION\s+TARGET\s+OUTCOME\s+CHANGES$/);
  const table = tableRows(all.stdout);
  expect(table.map((row) => row[2])).toEqual(["token.revoke", "token.create", "source.update", "source.create"]);
  for (const row of table) {
    expect(row[0]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    expect(row[1]).toBe("admin token");
    expect(row[4]).toBe("ok");
  }
  expect(table.map((row) => row[3])).toEqual([
    `token:${token.token.id}`,
    `token:${token.token.id}`,
    `source:${source.source.id}`,
    `source:${source.source.id}`,
  ]);
  expect(table[2]![5]).toContain('name: "audited" → "renamed"');

  const json = await waypostJson<{ events: EventJson[] }>(["audit"], env);
  expect(json.events.map((e) => e.action)).toEqual(["token.revoke", "token.create", "source.update", "source.create"]);
  for (const event of json.events)
    expect(event).toMatchObject({ actorKind: "admin-token", actorId: "admin-token", actorName: "admin token" });
  expect(json.events[2]!.diff).toMatchObject({ name: { from: "audited", to: "renamed" } });

  const [tokenActions, update, bySource, byActor, byNobody, newest] = await Promise.all([
    waypost(["audit", "--action", "token."], env),
    waypost(["audit", "--action", "source.update"], env),
    waypost(["audit", "--target", source.source.id], env),
    waypost(["audit", "--actor", "admin-token", "--json"], env),
    waypost(["audit", "--actor", "00000000-0000-4000-8000-000000000404"], env),
    waypost(["audit", "--limit", "1"], env),
  ]);
  expect(tableRows(tokenActions.stdout).map((row) => row[2])).toEqual(["token.revoke", "token.create"]);
  expect(tableRows(update.stdout).map((row) => row[2])).toEqual(["source.update"]);
  expect(tableRows(bySource.stdout).map((row) => row[2])).toEqual(["source.update", "source.create"]);
  expect((JSON.parse(byActor.stdout) as { events: EventJson[] }).events).toHaveLength(4);
  expect(byNobody).toMatchObject({ code: 0, stdout: "TIME  ACTOR  ACTION  TARGET  OUTCOME  CHANGES\n" });
  expect(tableRows(newest.stdout).map((row) => row[2])).toEqual(["token.revoke"]);

  // A window: everything is from the last minute; nothing is older than an hour.
  const [recent, old] = await Promise.all([waypost(["audit", "--since", "1m"], env), waypost(["audit", "--until", "1h"], env)]);
  expect(tableRows(recent.stdout)).toHaveLength(4);
  expect(tableRows(old.stdout)).toHaveLength(0);

  // Neither the token's secret nor the source's write key is in the log, as text or JSON.
  for (const output of [all.stdout, JSON.stringify(json), tokenActions.stdout, byActor.stdout]) {
    expect(output).not.toContain(token.secret);
    expect(output).not.toContain(source.source.writeKey);
  }
});

test("audit --limit: at most that many, with the token of the rest in --json", async () => {
  for (let i = 0; i < 3; i++) expect((await waypost(["sources", "create", "--name", `paged ${i}`], env)).code).toBe(0);
  const [three, many] = await Promise.all([
    waypostJson<{ events: EventJson[]; nextPageToken?: string }>(["audit", "--action", "source.create", "--limit", "3"], env),
    waypostJson<{ events: EventJson[]; nextPageToken?: string }>(["audit", "--action", "source.", "--limit", "500"], env),
  ]);
  expect(three.events).toHaveLength(3);
  expect(three.nextPageToken).toBeTruthy();
  expect(many.events.map((e) => e.action)).toEqual(["source.create", "source.create", "source.create", "source.update", "source.create"]);
  expect(many.nextPageToken).toBeUndefined();
});

describe("diffSummary: a diff in a line", () => {
  test("changes, secrets, additions and removals", () => {
    expect(diffSummary({ name: { from: "a", to: "b" }, sharedSecret: "changed" })).toBe('name: "a" → "b"; sharedSecret: changed');
    expect(diffSummary({ enabled: { to: true }, "webhooks.0.url": { from: "http://x" } })).toBe(
      'enabled: (none) → true; webhooks.0.url: "http://x" → (none)',
    );
    expect(diffSummary({ request: { id: "42" } })).toBe('request: {"id":"42"}');
    expect(diffSummary(undefined)).toBe("-");
    expect(diffSummary({})).toBe("-");
  });

  test("long values and long diffs are cut", () => {
    const long = diffSummary({ transform: { from: "x".repeat(100), to: "y" } });
    expect(long).toBe(`transform: "${"x".repeat(58)}… → "y"`);
    const many = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`field${i}`, { from: i, to: i + 1 }]));
    const cut = diffSummary(many);
    expect(cut.length).toBeLessThan(240);
    expect(cut).toMatch(/^field0: 0 → 1; field1: 1 → 2; .*; … \(\d+ more\)$/);
  });
});
