import { expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import { cliEnv, waypost } from "./support.js";

// `waypost stats` with more destinations than Node's default listener limit
// (10 per event on one emitter): one table row per destination, each named.
let env: NodeJS.ProcessEnv;
let names: string[];

const test = testWith();
test.beforeAll(async ({ server }) => {
  env = cliEnv(server);
  const source = await server.createSource();
  names = Array.from({ length: 25 }, (_, i) => `stats-${i}`);
  for (const name of names) {
    await server.createDestination({ name, sourceIds: [source.id], webhooks: [{ url: "http://127.0.0.1:9/" }], enabled: false });
  }
});

test("stats of every destination names each one and warns of nothing", async () => {
  const result = await waypost(["stats"], env);
  expect(result.code, result.stderr).toBe(0);
  expect(result.stderr).toBe("");
  const lines = result.stdout.trim().split("\n");
  expect(lines).toHaveLength(names.length + 1);
  for (const name of names) expect(result.stdout).toMatch(new RegExp(`^\\S+\\s+${name}\\s`, "m"));
});

test("stats --destination NAME (or ID) fills NAME and warns of nothing", async () => {
  const byName = await waypost(["stats", "--destination", "stats-7"], env);
  expect(byName.code, byName.stderr).toBe(0);
  expect(byName.stderr).toBe("");
  const [header, row] = byName.stdout.split("\n");
  expect(header).toMatch(/^DESTINATION\s+NAME\s/);
  expect(row).toMatch(/^\S+\s+stats-7\s+0\s/);
  const id = row!.split(/\s+/)[0]!;
  const byId = await waypost(["stats", "--destination", id], env);
  expect(byId.code, byId.stderr).toBe(0);
  expect(byId.stderr).toBe("");
  expect(byId.stdout.split("\n")[1]).toMatch(new RegExp(`^${id}\\s+stats-7\\s`));
});
