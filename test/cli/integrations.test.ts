import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import { cliEnv, waypost, waypostJson } from "./support.js";

let env: NodeJS.ProcessEnv;
let sourceId = "";
const work = mkdtempSync(path.join(tmpdir(), "waypost-cli-integrations-"));

const test = testWith({ server: { config: { role: "api" } } });
test.beforeAll(async ({ server }) => {
  env = cliEnv(server);
  sourceId = (await server.createSource("cli integrations")).id;
});

test("integrations list [--search] and integrations show SLUG", async () => {
  const all = await waypost(["integrations", "list"], env);
  expect(all.code, all.stderr).toBe(0);
  expect(all.stdout.split("\n")[0]).toMatch(/^SLUG\s+NAME\s+ACTIONS\s+BATCH$/);
  expect(all.stdout.trim().split("\n").length).toBeGreaterThan(150);
  const found = await waypost(["integrations", "list", "--search", "MixPanel"], env);
  expect(found.stdout).toMatch(/^mixpanel\s+Mixpanel \(Actions\)\s+6\s+\d+$/m);
  expect(found.stdout).not.toMatch(/^amplitude/m);

  const shown = await waypost(["integrations", "show", "mixpanel"], env);
  expect(shown.code, shown.stderr).toBe(0);
  expect(shown.stdout).toMatch(/--setting apiSecret \(password, required, secret\): Secret Key/);
  expect(shown.stdout).toMatch(/--setting apiRegion \(string\): Data Residency; one of "US 🇺🇸", "EU 🇪🇺", "IN 🇮🇳"; default "US 🇺🇸"/);
  expect(shown.stdout).toMatch(/^ {2}trackEvent: Track Event \(batches\)/m);
  expect(shown.stdout).toMatch(/^ {2}Track Calls: trackEvent when type = "track"/m);

  const missing = await waypost(["integrations", "show", "kafka"], env);
  expect(missing.code).not.toBe(0);
  expect(missing.stderr).toContain('integration "kafka" not found');
});

test("destinations create --integration with --setting: presets by default, the secret never printed, kept on update", async ({
  server,
}) => {
  const created = await waypostJson<{ destination: { id: string; kind: string; integration: any } }>(
    [
      ..."destinations create --name mixpanel --integration mixpanel".split(" "),
      ...["--source", sourceId, "--setting", "projectToken=tok-9", "--setting", "apiSecret=cli-mixpanel-secret"],
    ],
    env,
  );
  expect(created.destination.kind).toBe("DESTINATION_KIND_INTEGRATION");
  expect(created.destination.integration.settings).toMatchObject({ projectToken: "tok-9", apiSecret: "***" });
  expect(created.destination.integration.subscriptions.map((s: any) => s.name)).toContain("Track Calls");
  expect(JSON.stringify(created)).not.toContain("cli-mixpanel-secret");

  const text = await waypost(["destinations", "get", created.destination.id], env);
  expect(text.stdout).toMatch(/kind:\s+integration/);
  expect(text.stdout).toMatch(/integration:\s+mixpanel/);
  // In the entry's order, as integrations show lists them.
  expect(text.stdout).toMatch(/^settings:\s+projectToken=tok-9 apiSecret=\*\*\* apiRegion=US 🇺🇸 strictMode=1$/m);
  expect(text.stdout).toMatch(/subscription:\s+Track Calls: trackEvent when type = "track"/);
  expect(text.stdout).not.toContain("cli-mixpanel-secret");
  const list = await waypost(["destinations", "list"], env);
  expect(list.stdout).not.toContain("cli-mixpanel-secret");

  const updated = await waypost(["destinations", "update", created.destination.id, "--setting", "apiRegion=EU 🇪🇺"], env);
  expect(updated.code, updated.stderr).toBe(0);
  expect(updated.stdout).not.toContain("cli-mixpanel-secret");
  const { rows } = await server.pool.query("SELECT integration FROM destinations WHERE id = $1", [created.destination.id]);
  expect(rows[0].integration.settings).toEqual({
    projectToken: "tok-9",
    apiSecret: "cli-mixpanel-secret",
    apiRegion: "EU 🇪🇺",
    strictMode: "1",
  });
});

test("--subscriptions-file gives the subscriptions; refusals name the path", async () => {
  const file = path.join(work, "subscriptions.json");
  writeFileSync(
    file,
    JSON.stringify([
      {
        name: "Orders",
        subscribe: 'type = "track" and event = "Order Completed"',
        action: "postToChannel",
        mapping: { url: "https://hooks.slack.com/services/T0/B0/X", text: { "@template": "{{userId}} ordered" } },
      },
    ]),
  );
  const created = await waypostJson<{ destination: { id: string; integration: any } }>(
    ["destinations", "create", "--name", "slack", "--integration", "slack", "--source", sourceId, "--subscriptions-file", file],
    env,
  );
  expect(created.destination.integration.subscriptions).toEqual([
    expect.objectContaining({ name: "Orders", action: "postToChannel", subscribe: 'type = "track" and event = "Order Completed"' }),
  ]);

  writeFileSync(file, JSON.stringify([{ name: "Orders", subscribe: 'type = "track"', action: "postToChannel", mapping: { link: "x" } }]));
  const refused = await waypost(["destinations", "update", created.destination.id, "--subscriptions-file", file], env);
  expect(refused.code).not.toBe(0);
  expect(refused.stderr).toContain('destination.integration.subscriptions[0].mapping.link: the action "postToChannel" has no field "link"');

  writeFileSync(file, JSON.stringify({ name: "not a list" }));
  const notList = await waypost(["destinations", "update", created.destination.id, "--subscriptions-file", file], env);
  expect(notList.stderr).toContain("must hold a JSON array of subscriptions");

  const badSetting = await waypost(["destinations", "create", "--name", "x", "--integration", "mixpanel", "--setting", "nokey"], env);
  expect(badSetting.stderr).toContain('--setting: "nokey" is not KEY=VALUE');
  const required = await waypost(
    ["destinations", "create", "--name", "x", "--integration", "mixpanel", "--setting", "projectToken=t"],
    env,
  );
  expect(required.stderr).toContain("destination.integration.settings.apiSecret: required");
});
