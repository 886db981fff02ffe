import { afterAll, describe, expect } from "vitest";
import type { Browser, Page } from "playwright-core";
import { launchBrowser } from "../helpers/browser.js";
import { testWith } from "../helpers/fixtures.js";
import { completionsOf } from "../helpers/server.js";

/**
 * The destination form's routing rules (Filter, Dropped fields, Transform),
 * Test against recent calls, and the message page, in Debian's Chromium
 * against a real Waypost; what the form saved is read back with GetDestination.
 */
const test = testWith();

describe("routing rules in the console", () => {
  let browser: Browser;
  let page: Page;
  let source = { id: "", writeKey: "" };
  const pageErrors: string[] = [];

  test.beforeAll(async ({ server }) => {
    source = await server.createSource("shop");
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

  test("edits the rules, shows a bad filter's error under Filter, and tests the draft against recent calls", async ({
    server,
    receiver,
  }) => {
    const tracking = server.tracking(source.writeKey);
    const small = await tracking.track({ track: { userId: "u", event: "Order Completed", properties: { total: 5 } } });
    const big = await tracking.track({ track: { userId: "u", event: "Order Completed", properties: { total: 500, email: "e@x" } } });

    await page.goto(`${server.url}/console/destinations/new`);
    await page.getByLabel("Name", { exact: true }).fill("orders");
    await page.getByRole("checkbox", { name: "shop", exact: true }).check();
    await page.getByRole("textbox", { name: "Webhook 1 URL" }).fill(receiver.url);
    const filter = page.getByRole("textbox", { name: "Filter" });
    await filter.fill('{"properties.total": {"$gt": "100"}}');
    await page.getByRole("button", { name: "Create destination" }).click();
    await page.locator("#error-filter").filter({ hasText: "filter.properties.total.$gt: must be a number" }).waitFor();
    expect(await filter.getAttribute("aria-invalid")).toBe("true");

    await filter.fill('{"properties.total": {"$gt": 100}}');
    await page.getByRole("textbox", { name: "Dropped fields" }).fill("properties.email\ncontext.ip");
    await page.getByRole("textbox", { name: "Transform" }).fill("function transform(e) { e.event = 'order'; return e }");
    await page.getByRole("button", { name: "Test against recent calls" }).click();
    const results = page.getByRole("table", { name: "Test results" });
    await results.waitFor();
    const rows = results.getByRole("row");
    await rows.filter({ hasText: small.messageId }).filter({ hasText: "Filtered" }).waitFor();
    const sent = rows.filter({ hasText: big.messageId });
    expect(await sent.textContent()).toContain("Send");
    expect(await sent.textContent()).toContain('"event": "order"'.replace(": ", ":"));
    expect(await sent.textContent()).not.toContain("e@x");
    expect(receiver.requests).toEqual([]);

    await page.getByRole("button", { name: "Create destination" }).click();
    await page.getByRole("table", { name: "Destinations" }).waitFor();
    const [created] = (await server.destinations.listDestinations({})).destinations;
    expect(created).toMatchObject({
      name: "orders",
      filter: { "properties.total": { $gt: 100 } },
      dropFields: ["properties.email", "context.ip"],
    });
    expect(created!.transform).toContain("e.event = 'order'");

    // The edit form shows what is stored.
    await page.goto(`${server.url}/console/destinations/${created!.id}`);
    expect(JSON.parse(await page.getByRole("textbox", { name: "Filter" }).inputValue())).toEqual({ "properties.total": { $gt: 100 } });
    expect(await page.getByRole("textbox", { name: "Dropped fields" }).inputValue()).toBe("properties.email\ncontext.ip");
  });

  test("opens a message page from the overview's Message ID box and from a delivery, with its fate everywhere", async ({ server }) => {
    const [orders] = (await server.destinations.listDestinations({})).destinations;
    const done = completionsOf(server, orders!.id, 1);
    const { messageId } = await server
      .tracking(source.writeKey)
      .track({ track: { userId: "u", event: "Order Completed", properties: { total: 900 } } });
    await done;
    const skipped = await server
      .tracking(source.writeKey)
      .track({ track: { userId: "u", event: "Order Completed", properties: { total: 1 } } });

    await page.goto(`${server.url}/console/`);
    await page.getByRole("textbox", { name: "Message ID" }).fill(skipped.messageId);
    await page.getByRole("button", { name: "Explain" }).click();
    const fates = page.getByRole("table", { name: "Fate at every destination" });
    await fates.getByRole("row").filter({ hasText: "orders" }).filter({ hasText: "Filtered" }).filter({ hasText: "filter" }).waitFor();

    // The overview counts filtered calls.
    await page.goto(`${server.url}/console/`);
    const card = page.getByRole("article", { name: "orders" });
    await card.getByRole("columnheader", { name: "Filtered" }).waitFor();
    await card
      .getByRole("row", { name: /Last 24 h/ })
      .getByRole("cell")
      .nth(3)
      .filter({ hasText: /^1$/ })
      .waitFor();

    const [delivery] = (await server.deliveries.listDeliveries({ destinationId: orders!.id, messageId })).deliveries;
    await page.goto(`${server.url}/console/deliveries/${delivery!.id}`);
    await page.getByRole("link", { name: messageId }).click();
    const row = page.getByRole("table", { name: "Fate at every destination" }).getByRole("row").filter({ hasText: "orders" });
    await row.filter({ hasText: "Delivered" }).waitFor();
    await row.getByRole("link", { name: delivery!.id }).waitFor();
    expect(pageErrors).toEqual([]);
  });

  test("sets Consent categories and Require consent, tests them (No consent), and shows them on the destination page", async ({
    server,
    receiver,
  }) => {
    const tracking = server.tracking(source.writeKey);
    const granted = await tracking.track({
      track: { userId: "u", event: "Granted", context: { consent: { categoryPreferences: { Ads: true, Analytics: true } } } as never },
    });
    const refused = await tracking.track({
      track: { userId: "u", event: "Refused", context: { consent: { categoryPreferences: { Ads: false, Analytics: true } } } as never },
    });
    const silent = await tracking.track({ track: { userId: "u", event: "Silent" } });

    await page.goto(`${server.url}/console/destinations/new`);
    await page.getByLabel("Name", { exact: true }).fill("consenting");
    await page.getByRole("checkbox", { name: "shop", exact: true }).check();
    await page.getByRole("textbox", { name: "Webhook 1 URL" }).fill(receiver.url);
    const categories = page.getByRole("textbox", { name: "Consent categories" });
    await categories.fill(`Ads, Analytics\n${"x".repeat(101)}`);
    await page.getByRole("button", { name: "Create destination" }).click();
    await page.locator("#error-consentCategories").filter({ hasText: "consentCategories[2]: is longer than 100 characters" }).waitFor();
    expect(await categories.getAttribute("aria-invalid")).toBe("true");

    await categories.fill("Ads,\nAnalytics");
    await page.getByRole("checkbox", { name: "Require consent" }).check();
    await page.getByRole("checkbox", { name: "Add profile id" }).check();
    await page.getByRole("button", { name: "Test against recent calls" }).click();
    const rows = page.getByRole("table", { name: "Test results" }).getByRole("row");
    await rows.filter({ hasText: refused.messageId }).filter({ hasText: "No consent" }).waitFor();
    expect(await rows.filter({ hasText: silent.messageId }).textContent()).toContain("No consent");
    expect(await rows.filter({ hasText: granted.messageId }).textContent()).toContain("Send");

    await page.getByRole("button", { name: "Create destination" }).click();
    await page.getByRole("table", { name: "Destinations" }).waitFor();
    const created = (await server.destinations.listDestinations({})).destinations.find((d) => d.name === "consenting");
    expect(created).toMatchObject({ consentCategories: ["Ads", "Analytics"], requireConsent: true, addProfileId: true });

    await page.goto(`${server.url}/console/destinations/${created!.id}`);
    expect(await page.getByRole("textbox", { name: "Consent categories" }).inputValue()).toBe("Ads, Analytics");
    expect(await page.getByRole("checkbox", { name: "Require consent" }).isChecked()).toBe(true);
    expect(await page.getByRole("checkbox", { name: "Add profile id" }).isChecked()).toBe(true);
    expect(pageErrors).toEqual([]);
  });
});
