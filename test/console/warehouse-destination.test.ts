import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect } from "vitest";
import { DestinationKind } from "../../gen/waypost/v1/destination_pb.js";
import { launchBrowser } from "../helpers/browser.js";
import { testWith } from "../helpers/fixtures.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { completionsOf, startTestServer, type TestServer } from "../helpers/server.js";

/**
 * The destination form for a Postgres warehouse, in Chromium against a real
 * Waypost: the kind chosen on create, the URL's password never shown, the
 * server's message beside the field it names.
 */
const test = testWith();

describe("a Postgres destination in the console", () => {
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const pageErrors: string[] = [];
  const url = "postgres://loader:pa55word@warehouse.internal:5432/analytics";

  test.beforeAll(async ({ server }) => {
    await server.createSource("web");
    browser = await launchBrowser();
    context = await browser.newContext({ viewport: { width: 1500, height: 1000 } });
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    page.on("pageerror", (error) => pageErrors.push(String(error)));
    await page.goto(`${server.url}/console/`);
    await page.getByLabel("Admin token").fill(server.adminToken);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("navigation", { name: "Main" }).waitFor();
  });
  afterAll(async () => {
    await browser?.close();
  });

  test("creates a Postgres destination, shows the schema error beside its field, and never shows the password", async ({ server }) => {
    await page.goto(`${server.url}/console/destinations/new`);
    await page.getByLabel("Name", { exact: true }).fill("warehouse");
    await page.getByRole("checkbox", { name: "web", exact: true }).check();
    await page.getByRole("combobox", { name: "Kind" }).selectOption({ label: "Postgres warehouse" });
    expect(await page.getByRole("textbox", { name: "Webhook 1 URL" }).count()).toBe(0);
    await page.getByRole("textbox", { name: "Warehouse URL" }).fill(url);
    await page.getByRole("textbox", { name: "Schema" }).fill("Not A Schema");
    await page.getByRole("button", { name: "Create destination" }).click();
    const schemaError = page.locator("#error-postgres_schema");
    await schemaError.waitFor();
    expect(await schemaError.textContent()).toContain("lowercase Postgres identifier");
    expect((await server.destinations.listDestinations({})).destinations).toEqual([]);

    await page.getByRole("textbox", { name: "Schema" }).fill("analytics");
    await page.getByRole("button", { name: "Create destination" }).click();
    const table = page.getByRole("table", { name: "Destinations" });
    await table.getByRole("row").filter({ hasText: "warehouse" }).waitFor();
    expect(await table.textContent()).toContain("postgres://loader:****@warehouse.internal:5432/analytics");
    const [created] = (await server.destinations.listDestinations({})).destinations;
    expect(created?.kind).toBe(DestinationKind.POSTGRES);
    expect(created?.postgres?.schema).toBe("analytics");

    // Editing keeps the stored URL when the masked one is sent back.
    await page.goto(`${server.url}/console/destinations/${created!.id}`);
    const urlField = page.getByRole("textbox", { name: "Warehouse URL" });
    await urlField.waitFor();
    expect(await urlField.inputValue()).not.toContain("pa55word");
    expect(await page.getByRole("combobox", { name: "Kind" }).isDisabled()).toBe(true);
    await page.getByRole("textbox", { name: "Schema" }).fill("events");
    await page.getByRole("button", { name: "Save destination" }).click();
    await table.getByRole("row").filter({ hasText: "events" }).waitFor();
    const stored = await server.pool.query("SELECT postgres FROM destinations WHERE id = $1", [created!.id]);
    expect(stored.rows[0].postgres).toEqual({ url, schema: "events" });
    expect(await page.content()).not.toContain("pa55word");
    expect(pageErrors).toEqual([]);
  });
});

describe("a warehouse's values not stored in their columns, on the Overview", () => {
  let server: TestServer;
  let warehouse: TestDatabase;
  let browser: Browser;

  beforeAll(async () => {
    warehouse = await createTestDatabase({ migrated: false });
    // Each call is its own batch, loaded as soon as the loop turns.
    server = await startTestServer({
      config: { delivery: { warehouse: { flushMs: 0, batchSize: 1, connections: 1, maxColumns: 1_000 }, perDestinationConcurrency: 2 } },
    });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await warehouse?.drop();
  });

  test("counts them on the destination's card", async () => {
    const source = await server.createSource("app");
    const destination = await server.createDestination({
      name: "warehouse",
      sourceIds: [source.id],
      kind: DestinationKind.POSTGRES,
      postgres: { url: warehouse.url, schema: "shown" },
    });
    const client = server.tracking(source.writeKey);
    for (const amount of [5, "five"]) {
      const done = completionsOf(server, destination.id, 1);
      await client.track({ track: { userId: "u", event: "Paid", properties: { amount } } });
      server.waypost.delivery!.poke();
      expect((await done).map((c) => c.status)).toEqual(["delivered"]);
    }
    const page = await browser.newPage();
    page.setDefaultTimeout(10_000);
    await page.goto(`${server.url}/console/`);
    await page.getByLabel("Admin token").fill(server.adminToken);
    await page.getByRole("button", { name: "Sign in" }).click();
    const card = page.getByRole("article", { name: "warehouse" });
    const note = card.getByLabel("Values not stored in their columns");
    await note.waitFor();
    expect(await note.textContent()).toContain("1 in the last hour, 1 in the last 24 h");
  });
});
