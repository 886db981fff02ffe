import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, describe, expect } from "vitest";
import { DestinationKind } from "../../gen/waypost/v1/destination_pb.js";
import { launchBrowser } from "../helpers/browser.js";
import { testWith } from "../helpers/fixtures.js";

/**
 * The destination form for the broker kinds, in Chromium against a real
 * Waypost: the fields come from the kind's form, the server's message shows
 * beside the field it names, and write-only secrets are never shown.
 */
const test = testWith({ server: { config: { role: "api" } } });

describe("broker destinations in the console", () => {
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const pageErrors: string[] = [];
  const amqpUrl = "amqps://publisher:amqp-pa55@broker.example.com:5671/events";

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

  test("creates an AMQP destination (a bad routing key named beside its field), lists it masked, keeps the password on edit", async ({
    server,
  }) => {
    await page.goto(`${server.url}/console/destinations/new`);
    await page.getByLabel("Name", { exact: true }).fill("rabbit");
    await page.getByRole("checkbox", { name: "web", exact: true }).check();
    await page.getByRole("combobox", { name: "Kind" }).selectOption({ label: "AMQP (RabbitMQ)" });
    expect(await page.getByRole("textbox", { name: "Webhook 1 URL" }).count()).toBe(0);
    await page.getByRole("textbox", { name: "Broker URL" }).fill(amqpUrl);
    await page.getByRole("textbox", { name: "Exchange" }).fill("events");
    await page.getByRole("textbox", { name: "Routing key" }).fill("{user}");
    await page.getByRole("button", { name: "Create destination" }).click();
    const keyError = page.locator("#error-amqp_routingKey");
    await keyError.waitFor();
    expect(await keyError.textContent()).toContain("{user}");
    expect((await server.destinations.listDestinations({})).destinations).toEqual([]);

    await page.getByRole("textbox", { name: "Routing key" }).fill("{type}.{event}");
    await page.getByRole("button", { name: "Create destination" }).click();
    const table = page.getByRole("table", { name: "Destinations" });
    await table.getByRole("row").filter({ hasText: "rabbit" }).waitFor();
    expect(await table.textContent()).toContain("amqps://publisher:***@broker.example.com:5671/events");
    const [created] = (await server.destinations.listDestinations({})).destinations;
    expect(created?.kind).toBe(DestinationKind.AMQP);

    await page.goto(`${server.url}/console/destinations/${created!.id}`);
    const urlField = page.getByRole("textbox", { name: "Broker URL" });
    await urlField.waitFor();
    expect(await urlField.inputValue()).not.toContain("amqp-pa55");
    await page.getByRole("textbox", { name: "Exchange" }).fill("calls");
    await page.getByRole("button", { name: "Save destination" }).click();
    await table.getByRole("row").filter({ hasText: "calls" }).waitFor();
    const stored = await server.pool.query("SELECT amqp FROM destinations WHERE id = $1", [created!.id]);
    expect(stored.rows[0].amqp).toEqual({ url: amqpUrl, exchange: "calls", routingKey: "{type}.{event}", mandatory: true });
    expect(await page.content()).not.toContain("amqp-pa55");
    expect(pageErrors).toEqual([]);
  });

  test("creates a NATS destination with a token that is never shown again", async ({ server }) => {
    await page.goto(`${server.url}/console/destinations/new`);
    await page.getByLabel("Name", { exact: true }).fill("jets");
    await page.getByRole("checkbox", { name: "web", exact: true }).check();
    await page.getByRole("combobox", { name: "Kind" }).selectOption({ label: "NATS JetStream" });
    await page.getByRole("textbox", { name: "Servers" }).fill("nats://nats.example.com:4222");
    await page.getByRole("textbox", { name: "Subject" }).fill("events.{type}");
    await page.getByLabel("Token").fill("nats-tok-9");
    await page.getByRole("button", { name: "Create destination" }).click();
    const table = page.getByRole("table", { name: "Destinations" });
    await table.getByRole("row").filter({ hasText: "jets" }).waitFor();
    expect(await table.textContent()).toContain("events.{type}");
    const created = (await server.destinations.listDestinations({})).destinations.find((d) => d.name === "jets");
    expect(created?.kind).toBe(DestinationKind.NATS);
    expect(created?.nats).toMatchObject({ hasToken: true, token: "***" });
    const stored = await server.pool.query("SELECT nats FROM destinations WHERE id = $1", [created!.id]);
    expect(stored.rows[0].nats.token).toBe("nats-tok-9");
    expect(await page.content()).not.toContain("nats-tok-9");
    expect(pageErrors).toEqual([]);
  });

  test("saves a Postgres destination's routing rules from the form, as every kind's", async ({ server }) => {
    await page.goto(`${server.url}/console/destinations/new`);
    await page.getByLabel("Name", { exact: true }).fill("ruled warehouse");
    await page.getByRole("checkbox", { name: "web", exact: true }).check();
    await page.getByRole("combobox", { name: "Kind" }).selectOption({ label: "Postgres warehouse" });
    await page.getByRole("textbox", { name: "Warehouse URL" }).fill("postgres://loader:pw@warehouse.invalid:5432/analytics");
    await page.getByRole("textbox", { name: "Filter" }).fill('{"type": "track"}');
    await page.getByRole("textbox", { name: "Dropped fields" }).fill("context.ip");
    await page.getByRole("button", { name: "Create destination" }).click();
    await page.getByRole("table", { name: "Destinations" }).getByRole("row").filter({ hasText: "ruled warehouse" }).waitFor();
    const created = (await server.destinations.listDestinations({})).destinations.find((d) => d.name === "ruled warehouse");
    expect(created?.kind).toBe(DestinationKind.POSTGRES);
    expect(created?.filter).toEqual({ type: "track" });
    expect(created?.dropFields).toEqual(["context.ip"]);
    expect(pageErrors).toEqual([]);
  });
});
