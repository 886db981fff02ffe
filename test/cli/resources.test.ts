import { writeFileSync } from "node:fs";
import path from "node:path";
import { expect } from "vitest";
import { AudienceKind } from "../../gen/waypost/v1/audience_pb.js";
import { audienceClient } from "../audiences/support.js";
import { testWith } from "../helpers/fixtures.js";
import { createTestDatabase } from "../helpers/database.js";
import { cliEnv, startWaypost, waypost, waypostJson } from "./support.js";

let env: NodeJS.ProcessEnv;

const test = testWith();
test.beforeAll(async ({ server }) => {
  env = cliEnv(server);
});

test("--help on every level; usage errors exit 2", async () => {
  const [top, sources, create, tail] = await Promise.all([
    waypost(["--help"], env),
    waypost(["sources", "--help"], env),
    waypost(["destinations", "create", "--help"], env),
    waypost(["deliveries", "tail", "--help"], env),
  ]);
  expect(top.code).toBe(0);
  for (const command of ["serve", "sources", "destinations", "deliveries", "stats", "audiences", "deletions", "send"]) {
    expect(top.stdout).toMatch(new RegExp(`^  ${command}\\b`, "m"));
  }
  expect(sources.code).toBe(0);
  expect(sources.stdout).toMatch(/list[\s\S]*create[\s\S]*rotate-key[\s\S]*delete/);
  expect(create.code).toBe(0);
  for (const flag of ["--name", "--source", "--url", "--header", "--shared-secret", "--disabled", "--token", "--json"]) {
    expect(create.stdout).toContain(flag);
  }
  expect(tail.code).toBe(0);
  expect(tail.stdout).toContain("--destination");

  const usage = await Promise.all([
    waypost(["nonsense"], env),
    waypost(["sources"], env),
    waypost(["sources", "create"], env),
    waypost(["destinations", "get"], env),
    waypost(["deliveries", "list", "--status", "lost"], env),
    waypost(["deliveries", "list", "--since", "yesterday-ish"], env),
    waypost(["deliveries", "retry"], env),
    waypost(["sources", "list", "--url", "not a url"], env),
  ]);
  for (const result of usage) expect(result.code, result.stderr).toBe(2);
  expect(usage[2]!.stderr).toContain("--name");
  expect(usage[4]!.stderr).toContain('--status: unknown status "lost"');
  expect(usage[5]!.stderr).toContain("--since");
});

test("the admin token: flag, environment, or the server's token file; RPC errors exit 1 with the Connect code", async ({ server }) => {
  const none = cliEnv(server, { WAYPOST_ADMIN_TOKEN: undefined });
  const missing = await waypost(["sources", "list"], none);
  expect(missing.code).toBe(2);
  expect(missing.stderr).toContain("no admin token");
  writeFileSync(path.join(none.WAYPOST_DATA_DIR!, "admin-token"), `${server.adminToken}\n`);
  const [fromFile, fromFlag, wrong, notFound] = await Promise.all([
    waypost(["sources", "list"], none),
    waypost(["sources", "list", "--token", server.adminToken], cliEnv(server, { WAYPOST_ADMIN_TOKEN: undefined })),
    waypost(["--token", "wrong-token-000000000", "sources", "list"], env),
    waypost(["destinations", "get", "00000000-0000-4000-8000-000000000404"], env),
  ]);
  expect(fromFile.code).toBe(0);
  expect(fromFlag.code).toBe(0);
  expect(wrong.code).toBe(1);
  expect(wrong.stderr).toMatch(/^waypost: unauthenticated: /);
  expect(notFound.code).toBe(1);
  expect(notFound.stderr).toMatch(/^waypost: not_found: destination "00000000-0000-4000-8000-000000000404" not found/);
  // --url picks the server: nothing listens here.
  const down = await waypost(["sources", "list", "--url", "http://127.0.0.1:1"], env);
  expect(down.code).toBe(1);
  expect(down.stderr).toMatch(/^waypost: unavailable: /);
});

test("sources: create, list, rotate-key, delete, as tables and as JSON", async () => {
  const created = await waypost(["sources", "create", "--name", "web"], env);
  expect(created.code).toBe(0);
  const writeKey = /write key:\s+(\S+)/.exec(created.stdout)![1]!;
  const id = /id:\s+(\S+)/.exec(created.stdout)![1]!;
  const json = await waypostJson<{ source: { id: string; writeKey: string } }>(["sources", "create", "--name", "app"], env);
  expect(json.source.writeKey).toMatch(/\S{20,}/);

  const list = await waypost(["sources", "list"], env);
  expect(list.stdout.split("\n")[0]).toMatch(/^ID\s+NAME\s+KIND\s+CREATED$/);
  expect(list.stdout).toMatch(new RegExp(`^${id}\\s+web\\s+sdk\\s+\\d{4}-`, "m"));
  const listed = await waypostJson<{ sources: Array<{ id: string; name: string }> }>(["sources", "list"], env);
  expect(listed.sources.map((s) => s.name).sort()).toEqual(["app", "web"]);

  const rotated = await waypostJson<{ source: { writeKey: string } }>(["sources", "rotate-key", id], env);
  expect(rotated.source.writeKey).not.toBe(writeKey);
  const oldKey = await waypost(["send", "track", "--write-key", writeKey, "--user", "u", "--event", "E"], env);
  expect(oldKey.code).toBe(1);
  expect(oldKey.stderr).toMatch(/^waypost: unauthenticated: /);
  const newKey = await waypostJson<{ messageId: string }>(
    ["send", "track", "--write-key", rotated.source.writeKey, "--user", "u", "--event", "E"],
    env,
  );
  expect(newKey.messageId).not.toBe("");

  const deleted = await waypost(["sources", "delete", json.source.id], env);
  expect(deleted).toMatchObject({ code: 0, stdout: `deleted source ${json.source.id}\n` });
  expect(await waypostJson(["sources", "delete", id], env)).toEqual({});
  expect((await waypostJson<{ sources?: unknown[] }>(["sources", "list"], env)).sources).toBeUndefined();
});

test("destinations: create, get, list, update, enable, disable, delete", async ({ server, receiver }) => {
  const source = await server.createSource("for destinations");
  const created = await waypostJson<{ destination: Record<string, unknown> & { id: string } }>(
    [
      "destinations",
      "create",
      "--name",
      "hooks",
      "--source",
      source.id,
      "--url",
      receiver.url,
      "--url",
      `${receiver.url}?b`,
      "--header",
      "X-Team: growth",
      "--header",
      "Authorization:Bearer t",
      "--shared-secret",
      "s3cret",
      "--disabled",
    ],
    env,
  );
  const id = created.destination.id;
  expect(created.destination).toMatchObject({
    name: "hooks",
    sourceIds: [source.id],
    enabled: false,
    hasSharedSecret: true,
    // Credential header values are write-only, as the shared secret is.
    webhooks: [
      { url: receiver.url, headers: { "X-Team": "growth", Authorization: "[masked]" } },
      { url: `${receiver.url}?b`, headers: { "X-Team": "growth", Authorization: "[masked]" } },
    ],
  });
  expect(JSON.stringify(created)).not.toContain("s3cret");

  const got = await waypost(["destinations", "get", id], env);
  expect(got.code).toBe(0);
  expect(got.stdout).toMatch(/^name:\s+hooks$/m);
  expect(got.stdout).toMatch(/^enabled:\s+no$/m);
  expect(got.stdout).toContain(`webhook 2: ${receiver.url}?b`);
  const list = await waypost(["destinations", "list"], env);
  expect(list.stdout).toMatch(
    new RegExp(`^${id}\\s+hooks\\s+no\\s+healthy\\s+none\\s+none\\s+1\\s+yes\\s+no\\s+${receiver.url.replace(/[.?]/g, "\\$&")}`, "m"),
  );

  // --header alone keeps the URLs.
  const updated = await waypostJson<{ destination: { name: string; webhooks: Array<{ url: string; headers: Record<string, string> }> } }>(
    ["destinations", "update", id, "--name", "renamed", "--header", "X-Team:ops"],
    env,
  );
  expect(updated.destination.name).toBe("renamed");
  expect(updated.destination.webhooks).toEqual([
    { url: receiver.url, headers: { "X-Team": "ops" } },
    { url: `${receiver.url}?b`, headers: { "X-Team": "ops" } },
  ]);
  const noSecret = await waypostJson<{ destination: { hasSharedSecret?: boolean } }>(
    ["destinations", "update", id, "--shared-secret", ""],
    env,
  );
  expect(noSecret.destination.hasSharedSecret).toBeUndefined();
  expect((await waypost(["destinations", "update", id], env)).code).toBe(2);
  const invalid = await waypost(["destinations", "update", id, "--url", "ftp://nope"], env);
  expect(invalid.code).toBe(1);
  expect(invalid.stderr).toMatch(/^waypost: invalid_argument: destination\.webhooks\[0\]\.url/);

  expect((await waypostJson<{ destination: { enabled: boolean } }>(["destinations", "enable", id], env)).destination.enabled).toBe(true);
  const disabled = await waypost(["destinations", "disable", id], env);
  expect(disabled.stdout).toMatch(/^enabled:\s+no$/m);
  expect(await waypost(["destinations", "delete", id], env)).toMatchObject({ code: 0, stdout: `deleted destination ${id}\n` });
  expect((await waypost(["destinations", "get", id], env)).code).toBe(1);
});

test("destinations commands take a name as well as an id, as --destination does", async ({ server, receiver }) => {
  const source = await server.createSource("for named destinations");
  const { id } = await server.createDestination({ name: "crm by name", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  const got = await waypost(["destinations", "get", "crm by name"], env);
  expect(got.stderr).toBe("");
  expect(got.code).toBe(0);
  expect(got.stdout).toMatch(new RegExp(`^id:\\s+${id}$`, "m"));
  expect(
    (await waypostJson<{ destination: { enabled?: boolean } }>(["destinations", "disable", "crm by name"], env)).destination.enabled,
  ).toBe(false);
  expect(
    (await waypostJson<{ destination: { id: string } }>(["destinations", "update", "crm by name", "--name", "crm"], env)).destination.id,
  ).toBe(id);
  expect((await waypostJson<{ destination: { enabled: boolean } }>(["destinations", "enable", "crm"], env)).destination.enabled).toBe(true);
  expect((await waypost(["destinations", "test", "crm", "--sample", "1"], env)).code).toBe(0);

  await server.createDestination({ name: "crm", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  const ambiguous = await waypost(["destinations", "get", "crm"], env);
  expect(ambiguous.code).toBe(2);
  expect(ambiguous.stderr).toContain('<destination>: 2 destinations are named "crm"; give one\'s id:');
  const unknown = await waypost(["destinations", "delete", "nobody"], env);
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toContain('<destination>: no destination has the id or name "nobody"');
  expect(await waypost(["destinations", "delete", id], env)).toMatchObject({ code: 0, stdout: `deleted destination ${id}\n` });
});

test("audiences list and sync from a file; deletions create and get", async ({ server }) => {
  const source = await server.createSource("for audiences");
  const audiences = audienceClient(server);
  const { audience } = await audiences.createAudience({ audience: { sourceId: source.id, name: "High Value Users" } });
  const { audience: trait } = await audiences.createAudience({
    audience: { sourceId: source.id, name: "Lifetime Value", kind: AudienceKind.COMPUTED_TRAIT },
  });
  const dir = env.WAYPOST_DATA_DIR!;
  writeFileSync(path.join(dir, "members.txt"), "u1\nu2\n\nu3\n");
  writeFileSync(path.join(dir, "values.json"), JSON.stringify({ u1: 42, u2: "gold" }));
  const synced = await waypost(["audiences", "sync", audience!.id, "--file", path.join(dir, "members.txt")], env);
  expect(synced.code).toBe(0);
  expect(synced.stdout).toMatch(/^added:\s+3$/m);
  const traitSync = await waypostJson<{ counts: { added: string } }>(
    ["audiences", "sync", trait!.id, "--file", path.join(dir, "values.json")],
    env,
  );
  expect(traitSync.counts.added).toBe("2");
  expect((await waypost(["audiences", "sync", audience!.id, "--file", path.join(dir, "missing.txt")], env)).code).toBe(2);

  const list = await waypost(["audiences", "list"], env);
  expect(list.stdout).toMatch(
    new RegExp(`^${audience!.id}\\s+${source.id}\\s+High Value Users\\s+high_value_users\\s+audience\\s+3\\s`, "m"),
  );
  expect(list.stdout).toMatch(/Lifetime Value\s+lifetime_value\s+computed trait\s+2\s/);
  const listed = await waypostJson<{ audiences: unknown[] }>(["audiences", "list", "--source", source.id], env);
  expect(listed.audiences).toHaveLength(2);

  const created = await waypostJson<{ deletionRequest: { id: string; userId: string } }>(
    ["deletions", "create", "--user", "u1", "--source", source.id],
    env,
  );
  expect(created.deletionRequest.userId).toBe("u1");
  const got = await waypost(["deletions", "get", created.deletionRequest.id], env);
  expect(got.code).toBe(0);
  expect(got.stdout).toMatch(/^user:\s+u1$/m);
  expect(got.stdout).toMatch(/^sources:\s+/m);
});

test("serve runs the service, as node dist/server.js does", async () => {
  const database = await createTestDatabase();
  try {
    const serveEnv = cliEnv(undefined, {
      DATABASE_URL: database.url,
      PORT: "0",
      HOST: "127.0.0.1",
      WAYPOST_ADMIN_TOKEN: "serve-test-token-0123456789",
      WAYPOST_LOG_LEVEL: "info",
    });
    const serve = startWaypost(["serve"], serveEnv);
    const listening = await serve.waitForLine((line) => line.includes("Waypost is listening"));
    const url = (JSON.parse(listening) as { url: string }).url;
    const list = await waypost(["sources", "list", "--url", url], serveEnv);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^ID\s+NAME\s+KIND\s+CREATED$/m);
    serve.child.kill("SIGTERM");
    expect(await serve.exited).toBe(0);
  } finally {
    await database.drop();
  }
});
