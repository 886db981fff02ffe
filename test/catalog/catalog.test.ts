import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { expect, test } from "vitest";
import { loadEntry } from "../../src/catalog/catalog-entry.js";
import {
  actionOf,
  catalogEntries,
  offeredEntries,
  offeredEntry,
  presetSubscriptions,
  secretSettingKeys,
  settingFields,
} from "../../src/catalog/catalog.js";

const run = promisify(execFile);

test("the committed index is the one the installed catalog gives (regenerate it with scripts/catalog-index.mjs after an upgrade)", async () => {
  const { stdout } = await run(process.execPath, ["scripts/catalog-index.mjs", "--json"], { maxBuffer: 16 * 1024 * 1024 });
  expect(catalogEntries()).toEqual(JSON.parse(stdout));
}, 60_000);

test("at least 150 entries are offered; the others say why", () => {
  expect(offeredEntries().length).toBeGreaterThanOrEqual(150);
  const reasons = Object.fromEntries(
    catalogEntries()
      .filter((row) => !row.offered)
      .map((row) => [row.slug, row.reason]),
  );
  expect(reasons.kafka).toMatch(/own connections.*kafkajs/);
  expect(reasons["aws-kinesis"]).toMatch(/own connections.*@aws-sdk/);
  expect(reasons.sftp).toMatch(/own connections.*ssh2-sftp-client/);
  expect(reasons.hubspot).toMatch(/OAuth app/);
  expect(reasons["salesforce-marketing-cloud"]).toBe("does not load: needs xml-js, which the catalog does not declare");
  expect(reasons.example).toBe("does not load: no entry");
  for (const row of catalogEntries()) expect(row.offered).toBe(row.reason === "");
  for (const slug of ["mixpanel", "amplitude", "slack", "webhook", "customerio", "braze", "klaviyo", "iterable"]) {
    expect(offeredEntry(slug)?.slug, slug).toBe(slug);
  }
  expect(offeredEntry("kafka")).toBeUndefined();
  expect(offeredEntry("no-such-entry")).toBeUndefined();
  const names = offeredEntries().map((row) => row.slug);
  expect(names).toEqual([...names].sort());
});

test("secret settings are the entry's password fields; presets are its automatic ones, enabled", () => {
  const mixpanel = loadEntry("mixpanel")!;
  expect(secretSettingKeys(mixpanel)).toEqual(["apiSecret"]);
  const region = settingFields(mixpanel).find((field) => field.key === "apiRegion")!;
  expect(region.choices).toContain("EU 🇪🇺");
  expect(region.default).toBe("US 🇺🇸");
  const presets = presetSubscriptions(mixpanel);
  expect(presets.length).toBeGreaterThan(3);
  expect(presets.find((p) => p.name === "Track Calls")).toMatchObject({
    action: "trackEvent",
    enabled: true,
    subscribe: expect.stringContaining("track"),
  });
  expect(new Set(presets.map((p) => p.name)).size).toBe(presets.length);
  // Specific-event presets are suggestions only.
  const automatic = (mixpanel.presets ?? []).filter((p) => p.type === "automatic").length;
  expect(presets.length).toBe(automatic);
  expect(actionOf(mixpanel, "trackEvent")?.hasBatch).toBe(true);
  expect(actionOf(mixpanel, "toString")).toBeUndefined();
});

test("docs/integrations.md lists every entry not offered, with its reason, and how many are offered", () => {
  const page = readFileSync(new URL("../../docs/integrations.md", import.meta.url), "utf8");
  const rows = new Map([...page.matchAll(/^\| `([^`]+)` \| [^|]* \| (.+) \|$/gm)].map((m) => [m[1]!, m[2]!]));
  const notOffered = catalogEntries().filter((row) => !row.offered);
  expect([...rows.keys()]).toEqual(notOffered.map((row) => row.slug));
  for (const row of notOffered) expect(rows.get(row.slug), row.slug).toBe(row.reason);
  expect(page).toContain(`Of the ${catalogEntries().length} entries of \`@segment/action-destinations\``);
  expect(page).toContain(`**${offeredEntries().length} are offered**`);
});
