import { afterAll, describe, expect } from "vitest";
import type { Page } from "playwright-core";
import { openConsole, type ConsolePage } from "../helpers/console-page.js";
import { testWith } from "../helpers/fixtures.js";

/**
 * A webhook's batch settings in the destination form, in Debian's Chromium
 * against a real Waypost: what the form saved is read back with
 * GetDestination; elements are found by role and accessible name.
 */
const test = testWith();

describe("batched webhooks in the console", () => {
  let consolePage: ConsolePage;
  let page: Page;

  test.beforeAll(async ({ server }) => {
    consolePage = await openConsole(server);
    page = consolePage.page;
  });
  afterAll(async () => {
    await consolePage?.browser.close();
  });

  const batchBox = () => page.getByRole("checkbox", { name: "Batch calls to webhook 1" });
  const maxCalls = () => page.getByRole("textbox", { name: /^Webhook 1 batch: most calls per POST/ });
  const maxWait = () => page.getByRole("textbox", { name: /^Webhook 1 batch: longest wait in ms/ });

  test("creates a batched webhook (the server's error beside a bad field first), shows it on edit and turns it off", async ({ server }) => {
    await page.goto(`${server.url}/console/destinations/new`);
    await page.getByLabel("Name", { exact: true }).fill("batched");
    await page.getByRole("textbox", { name: "Webhook 1 URL" }).fill("https://example.com/batched");
    await batchBox().check();
    await maxCalls().fill("1");
    await page.getByRole("button", { name: "Create destination" }).click();
    await page.locator("#error-webhooks_0__batch_maxCalls").filter({ hasText: "must be from 2 to 1000, got 1" }).waitFor();
    expect(await maxCalls().getAttribute("aria-invalid")).toBe("true");

    await maxCalls().fill("50");
    await maxWait().fill("250");
    await page.getByRole("button", { name: "Create destination" }).click();
    await page.getByRole("table", { name: "Destinations" }).getByRole("row").filter({ hasText: "batched" }).waitFor();
    const [created] = (await server.destinations.listDestinations({})).destinations;
    expect(created!.webhooks[0]!.batch).toMatchObject({ maxCalls: 50, maxBytes: 262_144, maxWaitMs: 250 });

    await page.goto(`${server.url}/console/destinations/${created!.id}`);
    expect(await batchBox().isChecked()).toBe(true);
    expect(await maxCalls().inputValue()).toBe("50");
    expect(await maxWait().inputValue()).toBe("250");
    await batchBox().uncheck();
    await page.getByRole("button", { name: "Save destination" }).click();
    await page.getByRole("table", { name: "Destinations" }).waitFor();
    const saved = (await server.destinations.getDestination({ id: created!.id })).destination!;
    expect(saved.webhooks[0]!.batch).toBeUndefined();
    expect(consolePage.problems).toEqual([]);
  });
});
