import { expect } from "vitest";
import { DestinationKind } from "../../gen/waypost/v1/destination_pb.js";
import { testWith } from "../helpers/fixtures.js";
import { cliEnv, waypost, waypostJson } from "./support.js";

let env: NodeJS.ProcessEnv;
let sourceId = "";

const test = testWith();
test.beforeAll(async ({ server }) => {
  env = cliEnv(server);
  sourceId = (await server.createSource("cli warehouse")).id;
});

const url = "postgres://loader:pa55word@warehouse.internal:5432/analytics";

test("destinations create --kind postgres: stored with its warehouse, the password never printed", async ({ server }) => {
  const created = await waypostJson<{
    destination: { id: string; kind: string; postgres: { url: string; schema: string; hasPostgresUrl: boolean } };
  }>(
    ["destinations", "create", "--name", "wh", "--source", sourceId, "--kind", "postgres", "--postgres-url", url, "--schema", "analytics"],
    env,
  );
  expect(created.destination.kind).toBe("DESTINATION_KIND_POSTGRES");
  expect(created.destination.postgres).toMatchObject({ schema: "analytics", hasPostgresUrl: true });
  expect(created.destination.postgres.url).not.toContain("pa55word");
  const stored = (await server.destinations.getDestination({ id: created.destination.id })).destination!;
  expect(stored.kind).toBe(DestinationKind.POSTGRES);

  const text = await waypost(["destinations", "get", created.destination.id], env);
  expect(text.code).toBe(0);
  expect(text.stdout).toMatch(/kind:\s+postgres/);
  expect(text.stdout).toMatch(/schema:\s+analytics/);
  expect(text.stdout).not.toContain("pa55word");
  const list = await waypost(["destinations", "list"], env);
  expect(list.stdout).toContain("postgres://loader:****@warehouse.internal:5432/analytics (schema analytics)");
  expect(list.stdout).not.toContain("pa55word");

  // --schema alone keeps the stored URL.
  const updated = await waypost(["destinations", "update", created.destination.id, "--schema", "events"], env);
  expect(updated.code, updated.stderr).toBe(0);
  const after = await server.pool.query("SELECT postgres FROM destinations WHERE id = $1", [created.destination.id]);
  expect(after.rows[0].postgres).toEqual({ url, schema: "events" });
});

test("usage and server errors: a missing URL, an unknown kind, a bad schema", async () => {
  const base = ["destinations", "create", "--name", "bad", "--source", sourceId];
  const [noUrl, badKind, noWebhook] = await Promise.all([
    waypost([...base, "--kind", "postgres"], env),
    waypost([...base, "--kind", "kafka"], env),
    waypost(base, env),
  ]);
  expect(noUrl.code).toBe(2);
  expect(noUrl.stderr).toContain("--postgres-url");
  expect(badKind.code).toBe(2);
  expect(badKind.stderr).toContain('--kind: "kafka" is not one of webhook, postgres');
  expect(noWebhook.code).toBe(2);
  expect(noWebhook.stderr).toContain("--url");
  const badSchema = await waypost([...base, "--kind", "postgres", "--postgres-url", url, "--schema", "Bad Schema"], env);
  expect(badSchema.code).toBe(1);
  expect(badSchema.stderr).toMatch(/invalid_argument: destination\.postgres\.schema: /);
});
