import type { Browser, Page } from "playwright-core";
import { afterAll, describe, expect } from "vitest";
import { DestinationKind } from "../../gen/waypost/v1/destination_pb.js";
import { launchBrowser } from "../helpers/browser.js";
import { testWith } from "../helpers/fixtures.js";
import { startReceiver } from "../helpers/receiver.js";
import { completionsOf } from "../helpers/server.js";

/**
 * What a newcomer met in the console, in Debian's Chromium against a real
 * Waypost: the calls behind a filtered count, destinations and sources of
 * one name, Test against recent calls after an edit, signing without a
 * secret, a warehouse delivery's page, and why retrying deliveries fail.
 */
const test = testWith();

describe("the console's rough edges", () => {
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  test.beforeAll(async ({ server }) => {
    browser = await launchBrowser();
    page = await (await browser.newContext({ viewport: { width: 1500, height: 1000 } })).newPage();
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

  test("links the overview's filtered count to the calls the filter turned away", async ({ server, receiver }) => {
    const source = await server.createSource("shop");
    await server.createDestination({
      name: "identifies",
      sourceIds: [source.id],
      webhooks: [{ url: receiver.url }],
      filter: { type: "identify" },
    });
    const tracking = server.tracking(source.writeKey);
    const first = await tracking.track({ track: { userId: "u1", event: "Viewed" } });
    const second = await tracking.track({ track: { userId: "u2", event: "Bought" } });

    await page.goto(`${server.url}/console/`);
    const card = page.getByRole("article", { name: "identifies" });
    // The figure split by reason for the chosen period (24 hours by default): what held them back.
    const held = card.getByRole("note", { name: "Held back in the last 24 hours" });
    await held.getByRole("link", { name: "2 held back by filter in the last 24 hours: list them" }).waitFor();
    expect(await held.textContent()).toBe("Held back in the last 24 hours: 2 filter");
    await card.getByRole("link", { name: "2 filtered in the last hour: list them" }).click();
    const table = page.getByRole("table", { name: "Calls without a delivery" });
    const rows = table.getByRole("row").filter({ hasText: "track" });
    await rows.nth(1).waitFor();
    // Newest first, each with its event, user and reason, linked to its message page.
    expect(await rows.nth(0).getByRole("cell").allTextContents()).toEqual(
      expect.arrayContaining([second.messageId, "shop", "track", "Bought", "u2", "Filtered", "filter"]),
    );
    expect(await rows.nth(1).textContent()).toContain(first.messageId);
    await page.getByRole("navigation", { name: "Reason" }).getByRole("link", { name: "Transform", exact: true }).click();
    await table.getByText("No calls.").waitFor();
    await page.getByRole("navigation", { name: "Reason" }).getByRole("link", { name: "Filter", exact: true }).click();
    await rows.nth(1).waitFor();
    await rows.nth(0).getByRole("link", { name: second.messageId }).click();
    await page.getByRole("heading", { name: `Message ${second.messageId}` }).waitFor();
  });

  test("tells destinations and sources of one name apart by where they send and their id", async ({ server, receiver }) => {
    const one = await server.createSource("twin source");
    const other = await server.createSource("twin source");
    const a = await server.createDestination({ name: "CRM", sourceIds: [one.id], webhooks: [{ url: `${receiver.url}/a` }] });
    const b = await server.createDestination({ name: "CRM", sourceIds: [other.id], webhooks: [{ url: `${receiver.url}/b` }] });

    await page.goto(`${server.url}/console/destinations`);
    const list = page.getByRole("table", { name: "Destinations" });
    await list.getByRole("row").filter({ hasText: "CRM" }).nth(1).waitFor();
    for (const [d, s] of [
      [a, one],
      [b, other],
    ] as const) {
      const row = list.getByRole("row").filter({ hasText: d.id.slice(0, 8) });
      expect(await row.getByRole("cell").first().textContent()).toBe(`CRM ${d.webhooks[0]!.url} · ${d.id.slice(0, 8)}`);
      // Its source is one of two named "twin source": which one, by the start of its id.
      expect(await row.getByRole("cell").nth(3).textContent()).toBe(`twin source (${s.id.slice(0, 8)})`);
    }
    // The column every kind fills (URLs, a warehouse, a broker, a catalog entry) says what it shows.
    await list.getByRole("columnheader", { name: "Sends to" }).waitFor();
    expect(await list.getByRole("columnheader", { name: "Webhooks" }).count()).toBe(0);
    // A name only one destination has gets nothing beside it.
    expect(await list.getByRole("row").filter({ hasText: "identifies" }).getByRole("cell").first().textContent()).toBe("identifies");

    await page.goto(`${server.url}/console/deliveries`);
    const select = page.getByRole("combobox", { name: "Destination" });
    await select.locator("option", { hasText: b.id.slice(0, 8) }).waitFor({ state: "attached" });
    const options = await select.locator("option").allTextContents();
    expect(options).toEqual(
      expect.arrayContaining([`CRM (${receiver.url}/a · ${a.id.slice(0, 8)})`, `CRM (${receiver.url}/b · ${b.id.slice(0, 8)})`]),
    );

    await page.goto(`${server.url}/console/destinations/new`);
    await page.getByRole("checkbox", { name: `twin source ${one.id.slice(0, 8)}` }).waitFor();
    await page.getByRole("checkbox", { name: `twin source ${other.id.slice(0, 8)}` }).waitFor();
    expect(await page.getByRole("checkbox", { name: "shop", exact: true }).count()).toBe(1);
  });

  test("shows test results below the form, full width, and clears them when the draft changes", async ({ server, receiver }) => {
    await page.goto(`${server.url}/console/destinations/new`);
    await page.getByLabel("Name", { exact: true }).fill("tested");
    await page.getByRole("checkbox", { name: "shop", exact: true }).check();
    await page.getByRole("textbox", { name: "Webhook 1 URL" }).fill(receiver.url);
    await page.getByRole("button", { name: "Test against recent calls" }).click();
    const results = page.getByRole("table", { name: "Test results" });
    await results.waitFor();
    expect(await results.getByRole("row").count()).toBe(3);
    const form = (await page.locator("form.stacked").boundingBox())!;
    const table = (await results.boundingBox())!;
    // Below the form, and wider than its column.
    expect(table.y).toBeGreaterThan(form.y + form.height);
    expect(table.width).toBeGreaterThan(form.width);

    await page.getByRole("textbox", { name: "Filter" }).fill('{"type": "identify"}');
    await results.waitFor({ state: "detached" });
    await page.getByRole("button", { name: "Test against recent calls" }).click();
    await results.getByRole("cell", { name: "Filtered" }).first().waitFor();
    await page.getByRole("checkbox", { name: "shop", exact: true }).uncheck();
    await results.waitFor({ state: "detached" });
  });

  test("offers to generate a signing secret when there is none, and to rotate it once there is", async ({ server, receiver }) => {
    const source = await server.createSource("unsigned");
    const destination = await server.createDestination({ name: "unsigned", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
    await page.goto(`${server.url}/console/destinations/${destination.id}`);
    await page.getByText("Signing secret: none").waitFor();
    expect(await page.getByRole("button", { name: "Rotate signing secret" }).count()).toBe(0);
    await page.getByRole("button", { name: "Generate signing secret" }).click();
    expect(await page.getByLabel("New signing secret of unsigned.").textContent()).toMatch(/^whsec_/);
    await page.getByText("Signing secret: set").waitFor();
    await page.getByRole("button", { name: "Rotate signing secret" }).waitFor();
    expect((await server.destinations.getDestination({ id: destination.id })).destination!.hasSigningSecret).toBe(true);
  });

  test("shows the last error of retrying deliveries in the list, and a warehouse delivery's page speaks of the warehouse", async ({
    server,
  }) => {
    const failing = await startReceiver({ respond: () => ({ status: 503 }) });
    try {
      const source = await server.createSource("flaky");
      const hook = await server.createDestination({ name: "flaky hook", sourceIds: [source.id], webhooks: [{ url: failing.url }] });
      const warehouse = await server.createDestination({
        name: "unreachable warehouse",
        sourceIds: [source.id],
        kind: DestinationKind.POSTGRES,
        postgres: { url: "postgres://loader:secret@127.0.0.1:1/analytics", schema: "analytics" },
      });
      const retrying = Promise.all([completionsOf(server, hook.id, 1), completionsOf(server, warehouse.id, 1)]);
      await server.tracking(source.writeKey).track({ track: { userId: "u", event: "Tried" } });
      await retrying;

      await page.goto(`${server.url}/console/deliveries?destination=${hook.id}`);
      const table = page.getByRole("table", { name: "Deliveries" });
      await table.getByRole("columnheader", { name: "Last error" }).waitFor();
      await table.getByRole("cell", { name: "HTTP 503" }).waitFor();

      // The destination's own page tells its health and last error (not only the list's tooltip).
      const failingHook = (await server.destinations.getDestination({ id: hook.id })).destination!;
      expect(failingHook.lastError).not.toBe("");
      await page.goto(`${server.url}/console/destinations/${hook.id}`);
      const health = page.getByRole("region", { name: "Health" });
      await health.getByText(failingHook.lastError, { exact: true }).waitFor();
      expect(await health.textContent()).toMatch(/HealthFailing|HealthCircuit open/);
      expect(await health.textContent()).toMatch(/Failures in a row[1-9]/);

      const [delivery] = (await server.deliveries.listDeliveries({ destinationId: warehouse.id })).deliveries;
      expect(delivery!.lastError).not.toBe("");
      await page.goto(`${server.url}/console/deliveries/${delivery!.id}`);
      await page.getByText("Loads it into the warehouse now rather than at its next attempt").waitFor();
      expect(await page.getByRole("main").textContent()).not.toMatch(/webhook/i);
      expect(await page.getByRole("heading", { name: "Request headers" }).count()).toBe(0);
    } finally {
      await failing.close();
    }
    expect(pageErrors).toEqual([]);
  });

  test("pages through a list with Next page and Previous page", async ({ server, receiver }) => {
    const source = await server.createSource("pager source");
    const destination = await server.createDestination({
      name: "pager",
      sourceIds: [source.id],
      webhooks: [{ url: receiver.url }],
      filter: { type: "identify" },
    });
    // One page is 50 calls: 51 turned away make two pages.
    const batch = Array.from({ length: 51 }, (_, i) => ({
      type: { case: "track" as const, value: { userId: `p${i}`, event: "Paged" } },
    }));
    expect((await server.tracking(source.writeKey).batch({ batch })).accepted).toBe(51);

    await page.goto(`${server.url}/console/destinations/${destination.id}/filtered`);
    const rows = page.getByRole("table", { name: "Calls without a delivery" }).getByRole("row").filter({ hasText: "Paged" });
    const previous = page.getByRole("button", { name: "Previous page" });
    const next = page.getByRole("button", { name: "Next page" });
    await rows.nth(49).waitFor();
    expect(await rows.count()).toBe(50);
    expect(await previous.isDisabled()).toBe(true);
    await page.getByText("Page 1", { exact: true }).waitFor();

    await next.click();
    await page.getByText("Page 2", { exact: true }).waitFor();
    await expect.poll(() => rows.count()).toBe(1);
    expect(await next.isDisabled()).toBe(true);

    await previous.click();
    await page.getByText("Page 1", { exact: true }).waitFor();
    await expect.poll(() => rows.count()).toBe(50);
  });
});
