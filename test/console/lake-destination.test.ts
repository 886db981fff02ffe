import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Page } from "playwright-core";
import { afterAll, expect } from "vitest";
import { DestinationKind, LakeFormat } from "../../gen/waypost/v1/destination_pb.js";
import { type ConsolePage, openConsole } from "../helpers/console-page.js";
import { testWith } from "../helpers/fixtures.js";

/**
 * A lake in the console, in Chromium against a real Waypost: created with
 * the form (the secret never shown again, a bad field's message beside it),
 * and its files written on the Overview once calls are delivered.
 */
const test = testWith({ server: { config: { delivery: { pollIntervalMs: 100 } } } });
const scratch = mkdtempSync(path.join(tmpdir(), "waypost-console-lake-"));
let opened: ConsolePage;
let page: Page;

test.beforeAll(async ({ server }) => {
  opened = await openConsole(server);
  page = opened.page;
});
afterAll(async () => {
  await opened?.browser.close();
  rmSync(scratch, { recursive: true, force: true });
});

test("creates a lake with the form, never shows its secret again, and shows its files on the Overview", async ({ server }) => {
  const source = await server.createSource("web");
  const directory = mkdtempSync(path.join(scratch, "files-"));
  await page.goto(`${server.url}/console/destinations/new`);
  await page.getByLabel("Name", { exact: true }).fill("lake");
  await page.getByRole("checkbox", { name: "web", exact: true }).check();
  await page.getByRole("combobox", { name: "Kind" }).selectOption({ label: "Lake (Parquet files in S3)" });
  await page.getByRole("textbox", { name: "Lake URL" }).fill("s3://lake/events");
  await page.getByRole("textbox", { name: "Access key id" }).fill("AKIDCONSOLE");
  await page.getByLabel("Secret access key").fill("console-lake-secret");
  await page.getByRole("textbox", { name: "Flush every (seconds)" }).fill("99999");
  await page.getByRole("button", { name: "Create destination" }).click();
  const flushError = page.locator("#error-lake_flushSeconds");
  await flushError.waitFor();
  expect(await flushError.textContent()).toContain("must be from 1 to 3600");

  await page.getByRole("textbox", { name: "Flush every (seconds)" }).fill("1");
  await page.getByRole("button", { name: "Create destination" }).click();
  const table = page.getByRole("table", { name: "Destinations" });
  await table.getByRole("row").filter({ hasText: "s3://lake/events" }).waitFor();
  const [created] = (await server.destinations.listDestinations({})).destinations;
  expect(created?.kind).toBe(DestinationKind.LAKE);
  expect(created?.lake).toMatchObject({ url: "s3://lake/events", accessKeyId: "AKIDCONSOLE", hasSecretAccessKey: true, flushSeconds: 1 });

  // Edited to a directory in NDJSON: the form shows the secret masked and sends it back as such.
  await page.goto(`${server.url}/console/destinations/${created!.id}`);
  const urlField = page.getByRole("textbox", { name: "Lake URL" });
  await urlField.waitFor();
  expect(await page.content()).not.toContain("console-lake-secret");
  await urlField.fill(pathToFileURL(directory).href);
  await page.getByRole("textbox", { name: "Access key id" }).fill("");
  await page.getByLabel("Secret access key").fill("");
  await page.getByRole("combobox", { name: "Format" }).selectOption({ label: "NDJSON, gzipped" });
  await page.getByRole("button", { name: "Save destination" }).click();
  await table
    .getByRole("row")
    .filter({ hasText: pathToFileURL(directory).href })
    .waitFor();
  const stored = await server.destinations.getDestination({ id: created!.id });
  expect(stored.destination?.lake).toMatchObject({ format: LakeFormat.NDJSON_GZ, hasSecretAccessKey: false });

  await server.tracking(source.writeKey).batch({
    batch: [1, 2, 3].map((i) => ({ type: { case: "track" as const, value: { messageId: `c-${i}`, userId: "u", event: "Viewed" } } })),
  });
  await server.waypost.delivery!.settle();
  await page.goto(`${server.url}/console/`);
  const files = page.getByRole("article", { name: "lake" }).getByRole("note", { name: "Files written" });
  await files.waitFor();
  expect(await files.textContent()).toMatch(/Files written: 2 \(6 rows, [\d.]+ MB\)\. Last: .+\.ndjson\.gz, 3 rows/);
  expect(opened.problems).toEqual([]);
});
