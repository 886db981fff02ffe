import { expect } from "vitest";
import { DestinationHealth, Ordering } from "../../gen/waypost/v1/destination_pb.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";
import { verifyStandardWebhook } from "../helpers/standard-webhooks.js";
import { cliEnv, waypost, waypostJson } from "./support.js";

/**
 * The destination settings of endpoint health, signing and flow control
 * through `waypost destinations`: flags in, columns and fields out, checked
 * against what the server stored (GetDestination) and what it does.
 */
let env: NodeJS.ProcessEnv;
let sourceId = "";

const test = testWith();
test.beforeAll(async ({ server }) => {
  env = cliEnv(server);
  sourceId = (await server.createSource("cli settings")).id;
});

const stored = async (server: TestServer, id: string) => (await server.destinations.getDestination({ id })).destination!;
const whsec = (fill: number) => `whsec_${Buffer.alloc(32, fill).toString("base64")}`;

test("--help names the new flags; a bad --ordering or --rate-limit is a usage error (exit 2) and changes nothing", async ({
  server,
  receiver,
}) => {
  const [create, update, rotate] = await Promise.all([
    waypost(["destinations", "create", "--help"], env),
    waypost(["destinations", "update", "--help"], env),
    waypost(["destinations", "rotate-signing-secret", "--help"], env),
  ]);
  for (const flag of ["--rate-limit", "--ordering", "--signing-secret", "--generate-signing-secret"]) expect(create.stdout).toContain(flag);
  for (const flag of ["--rate-limit", "--ordering", "--signing-secret"]) expect(update.stdout).toContain(flag);
  expect(update.stdout).not.toContain("--generate-signing-secret");
  expect(rotate.code).toBe(0);

  const base = ["destinations", "create", "--name", "bad", "--source", sourceId, "--url", receiver.url];
  const usage = await Promise.all([
    waypost([...base, "--ordering", "sideways"], env),
    waypost([...base, "--rate-limit", "-5"], env),
    waypost([...base, "--rate-limit", "1.5"], env),
    waypost([...base, "--rate-limit", "lots"], env),
    waypost(["destinations", "rotate-signing-secret"], env),
  ]);
  for (const result of usage) expect(result.code, result.stderr).toBe(2);
  expect(usage[0]!.stderr).toContain('--ordering: "sideways" is not one of per-user, none');
  expect(usage[1]!.stderr).toContain('--rate-limit: "-5" is not a whole number');
  expect((await server.destinations.listDestinations({})).destinations.filter((d) => d.name === "bad")).toEqual([]);

  // In range for the flag, out of range for the server: its invalid_argument, exit 1.
  const tooFast = await waypost([...base, "--rate-limit", "1000000"], env);
  expect(tooFast.code).toBe(1);
  expect(tooFast.stderr).toMatch(/^waypost: invalid_argument: destination\.maxRequestsPerSecond: /);
});

test("create with a rate limit, per-user ordering and a generated signing secret shown once; list and get show them", async ({
  server,
  receiver,
}) => {
  const created = await waypost(
    [
      "destinations",
      "create",
      "--name",
      "paced",
      "--source",
      sourceId,
      "--url",
      receiver.url,
      "--rate-limit",
      "25",
      "--ordering",
      "per-user",
      "--generate-signing-secret",
    ],
    env,
  );
  expect(created.code, created.stderr).toBe(0);
  const id = /^id:\s+(\S+)$/m.exec(created.stdout)![1]!;
  const secret = /^signing secret: (whsec_\S+)\s+\(shown once/m.exec(created.stdout)![1]!;
  expect(created.stdout).toMatch(/^rate limit:\s+25 requests\/s$/m);
  expect(created.stdout).toMatch(/^ordering:\s+per-user$/m);
  expect(await stored(server, id)).toMatchObject({ maxRequestsPerSecond: 25, ordering: Ordering.PER_USER, hasSigningSecret: true });

  // The secret signs: the receiver's request carries its Standard Webhooks signature.
  const writeKey = (await server.sources.rotateWriteKey({ id: sourceId })).source!.writeKey;
  const done = server.waitForDeliveries(1);
  await server.tracking(writeKey).track({ track: { userId: "u1", event: "Paced" } });
  await done;
  const request = receiver.requests.at(-1)!;
  expect(verifyStandardWebhook(secret, request, server.clock.now())).toMatchObject({ event: "Paced", userId: "u1" });

  // Shown once: get, list and JSON never carry it.
  const [got, list, listJson] = await Promise.all([
    waypost(["destinations", "get", id], env),
    waypost(["destinations", "list"], env),
    waypost(["destinations", "list", "--json"], env),
  ]);
  for (const output of [got.stdout, list.stdout, listJson.stdout]) expect(output).not.toContain(secret);
  expect(got.stdout).toMatch(/^health:\s+healthy$/m);
  expect(got.stdout).toMatch(/^signing secret:\s+set$/m);
  expect(got.stdout).toMatch(/^last error:\s+-$/m);
  expect(list.stdout.split("\n")[0]).toMatch(/^ID\s+NAME\s+ENABLED\s+HEALTH\s+RATE\s+ORDERING\s+SOURCES\s+SECRET\s+SIGNING\s+URLS$/);
  expect(list.stdout).toMatch(new RegExp(`^${id}\\s+paced\\s+yes\\s+healthy\\s+25/s\\s+per-user\\s+1\\s+no\\s+yes\\s`, "m"));

  // --json: the response's JSON, the secret in it once.
  const json = await waypostJson<{ destination: { id: string; hasSigningSecret: boolean }; signingSecret: string }>(
    ["destinations", "create", "--name", "json", "--source", sourceId, "--url", receiver.url, "--generate-signing-secret"],
    env,
  );
  expect(json.signingSecret).toMatch(/^whsec_[A-Za-z0-9+/]{40,}={0,2}$/);
  expect(json.destination.hasSigningSecret).toBe(true);
});

test('update: --rate-limit 0 removes the limit, --ordering none, --signing-secret sets and "" removes; rotate-signing-secret prints the new secret once', async ({
  server,
  receiver,
}) => {
  const { id } = await server.createDestination({
    name: "tuned",
    sourceIds: [sourceId],
    webhooks: [{ url: receiver.url }],
    maxRequestsPerSecond: 10,
    ordering: Ordering.PER_USER,
  });
  const cleared = await waypostJson<{ destination: { maxRequestsPerSecond?: number; ordering: string } }>(
    ["destinations", "update", id, "--rate-limit", "0", "--ordering", "none"],
    env,
  );
  expect(cleared.destination.ordering).toBe("ORDERING_NONE");
  expect(await stored(server, id)).toMatchObject({ maxRequestsPerSecond: 0, ordering: Ordering.NONE, name: "tuned" });

  const own = [whsec(1), whsec(2)];
  const set = await waypost(["destinations", "update", id, "--signing-secret", own[0]!, "--signing-secret", own[1]!], env);
  expect(set.code, set.stderr).toBe(0);
  expect(set.stdout).toMatch(/^signing secret:\s+set$/m);
  expect(set.stdout).not.toContain(own[0]);
  expect((await stored(server, id)).hasSigningSecret).toBe(true);
  const bad = await waypost(["destinations", "update", id, "--signing-secret", "not-a-secret"], env);
  expect(bad.code).toBe(1);
  expect(bad.stderr).toMatch(/^waypost: invalid_argument: destination\.signingSecrets\[0\]/);
  expect(bad.stderr).not.toContain("not-a-secret");

  const rotated = await waypost(["destinations", "rotate-signing-secret", id], env);
  expect(rotated.code, rotated.stderr).toBe(0);
  const secret = /^signing secret: (whsec_\S+)\s+\(shown once/m.exec(rotated.stdout)![1]!;
  expect(own).not.toContain(secret);
  const again = await waypostJson<{ signingSecret: string; destination: { id: string } }>(
    ["destinations", "rotate-signing-secret", id],
    env,
  );
  expect(again.destination.id).toBe(id);
  expect(again.signingSecret).toMatch(/^whsec_/);
  expect(again.signingSecret).not.toBe(secret);
  expect((await waypost(["destinations", "rotate-signing-secret", "00000000-0000-4000-8000-000000000404"], env)).code).toBe(1);

  const removed = await waypostJson<{ destination: { hasSigningSecret?: boolean } }>(
    ["destinations", "update", id, "--signing-secret", ""],
    env,
  );
  expect(removed.destination.hasSigningSecret).toBeUndefined();
  expect((await stored(server, id)).hasSigningSecret).toBe(false);
});

test("list and get show an open circuit and the last error", async ({ server, receiver }) => {
  const { id } = await server.createDestination({ name: "down", sourceIds: [sourceId], webhooks: [{ url: receiver.url }] });
  const now = server.clock.now();
  // The breaker's state as it writes it when it opens: open, a probe time and its cooldown.
  await server.pool.query(
    `INSERT INTO destination_health
       (destination_id, state, consecutive_failures, first_failure_at, opened_at, cooldown_ms, probe_at,
        last_failure_at, last_error, updated_at)
     VALUES ($1, 'open', 5, $2, $2, 30000, $3, $2, 'HTTP 503', $2)`,
    [id, now, new Date(now.getTime() + 30_000)],
  );
  expect((await stored(server, id)).health).toBe(DestinationHealth.CIRCUIT_OPEN);
  const [list, got] = await Promise.all([waypost(["destinations", "list"], env), waypost(["destinations", "get", id], env)]);
  expect(list.stdout).toMatch(new RegExp(`^${id}\\s+down\\s+yes\\s+circuit open\\s+none\\s+none\\s`, "m"));
  expect(got.stdout).toMatch(/^health:\s+circuit open$/m);
  expect(got.stdout).toMatch(/^consecutive failures:\s+5$/m);
  expect(got.stdout).toMatch(/^last error:\s+HTTP 503$/m);
  expect(got.stdout).toMatch(/^next probe:\s+\d{4}-\d\d-\d\dT/m);
});

test("get and create show credential header values as [masked]; update --name keeps them", async ({ server, receiver }) => {
  const created = await waypost(
    // prettier-ignore
    [
      "destinations",
      "create",
      "--name",
      "with credentials",
      "--source",
      sourceId,
      "--url",
      receiver.url,
      "--header",
      "Authorization: Bearer cli-credential",
      "--header",
      "X-Team: growth",
    ],
    env,
  );
  expect(created.code, created.stderr).toBe(0);
  expect(created.stdout).not.toContain("cli-credential");
  const id = (await server.destinations.listDestinations({})).destinations.find((d) => d.name === "with credentials")!.id;

  const shown = await waypost(["destinations", "get", id], env);
  expect(shown.code, shown.stderr).toBe(0);
  expect(shown.stdout).toContain("Authorization: [masked]");
  expect(shown.stdout).toContain("X-Team: growth");
  expect(shown.stdout).not.toContain("cli-credential");
  const json = await waypost(["destinations", "get", id, "--json"], env);
  expect(json.stdout).not.toContain("cli-credential");

  const renamed = await waypost(["destinations", "update", id, "--name", "renamed with credentials"], env);
  expect(renamed.code, renamed.stderr).toBe(0);
  const row = await server.pool.query("SELECT webhooks FROM destinations WHERE id = $1", [id]);
  expect(row.rows[0].webhooks[0].headers).toEqual({ Authorization: "Bearer cli-credential", "X-Team": "growth" });
});
