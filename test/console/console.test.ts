import { mkdirSync } from "node:fs";
import { afterAll, describe, expect } from "vitest";
import type { Browser, Page } from "playwright-core";
import { launchBrowser } from "../helpers/browser.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";

/**
 * The operator console in Debian's Chromium against a real Waypost and a
 * real webhook receiver. Everything is found by role and accessible name,
 * so the names people (and screen readers) see are what is tested. Waits
 * are Playwright's auto-waiting locators, never sleeps.
 */
const test = testWith();

describe("operator console in a real browser", () => {
  let browser: Browser;
  let page: Page;
  let writeKey = "";
  let destinationId = "";
  const pageErrors: string[] = [];
  const cspViolations: string[] = [];

  test.beforeAll(async () => {
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
    page.setDefaultTimeout(10_000);
    page.on("pageerror", (error) => pageErrors.push(String(error)));
    page.on("console", (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    });
    // Deletes and bulk replays ask for confirmation.
    page.on("dialog", (dialog) => void dialog.accept());
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** A call through the compatible HTTP API, with the write key as Basic auth. */
  async function track(server: TestServer, userId: string, event: string, messageId: string) {
    const response = await fetch(`${server.url}/v1/track`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Basic ${btoa(`${writeKey}:`)}` },
      body: JSON.stringify({ userId, event, messageId, properties: { plan: "pro" } }),
    });
    expect(response.status).toBe(200);
  }

  const nav = (name: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name, exact: true });
  const rowsOf = (table: string) => page.getByRole("table", { name: table }).getByRole("row");

  test("refuses a wrong token, then signs in with the right one and keeps it out of the URL", async ({ server }) => {
    await page.goto(`${server.url}/console`);
    expect(page.url()).toBe(`${server.url}/console/`);
    await page.getByLabel("Admin token").fill("not-the-token");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").filter({ hasText: "The admin token was refused" }).waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);

    await page.getByLabel("Admin token").fill(server.adminToken);
    await page.getByRole("button", { name: "Sign in" }).click();
    for (const name of ["Overview", "Sources", "Destinations", "Deliveries", "Live", "Audiences", "Deletions"]) {
      await nav(name).waitFor();
    }
    expect(page.url()).not.toContain(server.adminToken);
    expect(await page.evaluate(() => Object.values(sessionStorage))).toEqual([server.adminToken]);
  });

  test("creates a source (write key shown once) and a destination, showing a validation error next to its field", async ({
    server,
    receiver,
  }) => {
    await nav("Sources").click();
    await page.getByLabel("Name").fill("web");
    await page.getByRole("button", { name: "Create source" }).click();
    writeKey = (await page.getByLabel("Write key of web.").textContent()) ?? "";
    expect(writeKey.length).toBeGreaterThan(20);
    await page.getByRole("button", { name: "Copy" }).waitFor();
    await rowsOf("Sources").filter({ hasText: "web" }).waitFor();

    await nav("Destinations").click();
    await page.getByRole("link", { name: "New destination" }).click();
    await page.getByLabel("Name").fill("receiver");
    await page.getByRole("checkbox", { name: "web", exact: true }).check();
    const url = page.getByRole("textbox", { name: "Webhook 1 URL" });
    await url.fill("ftp://example.com/hook");
    await page.getByRole("button", { name: "Create destination" }).click();
    await page.locator("#error-webhooks_0__url").waitFor();
    expect(await url.getAttribute("aria-invalid")).toBe("true");
    expect(await page.locator(`#${await url.getAttribute("aria-describedby")}`).textContent()).toMatch(/must use http or https/);

    await url.fill(receiver.url);
    await page.getByRole("button", { name: "Add header to webhook 1" }).click();
    await page.getByRole("textbox", { name: "Webhook 1 header 1 name" }).fill("X-Team");
    await page.getByRole("textbox", { name: "Webhook 1 header 1 value" }).fill("growth");
    await page.getByLabel("Shared secret", { exact: true }).fill("s3cret");
    await page.getByRole("button", { name: "Create destination" }).click();
    await rowsOf("Destinations").filter({ hasText: "receiver" }).waitFor();

    const { destinations } = await server.destinations.listDestinations({});
    expect(destinations).toHaveLength(1);
    const [created] = destinations;
    destinationId = created!.id;
    expect(created!.webhooks[0]).toMatchObject({ url: receiver.url, headers: { "X-Team": "growth" } });
    expect(created!.hasSharedSecret).toBe(true);
    expect(created!.enabled).toBe(true);
  });

  test("shows deliveries with their exact body and attempts, and replays the failed ones with Retry all matching", async ({
    server,
    receiver,
  }) => {
    // The endpoint refuses (permanently) the calls of one user for now.
    receiver.respond = (request) =>
      request.body.includes("refused-user") ? { status: 400, body: "no thanks" } : { status: 200, body: "ok" };
    const finished = server.waitForDeliveries(4);
    await track(server, "happy-user", "Signed Up", "msg-happy-1");
    await track(server, "happy-user", "Upgraded", "msg-happy-2");
    await track(server, "refused-user", "Signed Up", "msg-refused-1");
    await track(server, "refused-user", "Upgraded", "msg-refused-2");
    await finished;

    await nav("Deliveries").click();
    const filters = page.getByRole("search", { name: "Filter deliveries" });
    await filters.getByLabel("Destination").selectOption({ label: "receiver" });
    await filters.getByLabel("Status").selectOption("failed");
    await filters.getByRole("button", { name: "Search" }).click();
    const failedRows = rowsOf("Deliveries").filter({ hasText: "failed" });
    await failedRows.nth(1).waitFor();
    // The unfiltered list (the two failed rows among four) may still be shown
    // until the search's answer replaces it: wait for the filter to apply.
    await expect.poll(() => rowsOf("Deliveries").filter({ hasText: "happy-user" }).count(), { timeout: 10_000 }).toBe(0);
    expect(await failedRows.count()).toBe(2);
    // The time range: nothing was created after 2099, everything before.
    await filters.getByLabel("Created since").fill("2099-01-01T00:00:00");
    await filters.getByRole("button", { name: "Search" }).click();
    await rowsOf("Deliveries").filter({ hasText: "No deliveries match." }).waitFor();
    await filters.getByLabel("Created since").fill("");
    await filters.getByLabel("Created before").fill("2099-01-01T00:00:00");
    await filters.getByRole("button", { name: "Search" }).click();
    await failedRows.nth(1).waitFor();
    expect(new URL(page.url()).searchParams.get("until")).toMatch(/^2099-01-01T00:00/);

    // The detail: the exact bytes the receiver got, the headers and the attempt.
    await rowsOf("Deliveries")
      .filter({ hasText: "msg-refused-1" })
      .getByRole("link", { name: /^Delivery / })
      .click();
    await page.getByRole("heading", { name: "Attempts" }).waitFor();
    const sent = receiver.requests.find((r) => r.body.includes("msg-refused-1"))!;
    // Indented for reading; the same JSON as the bytes sent.
    expect(JSON.parse((await page.getByLabel("Body", { exact: true }).textContent())!)).toEqual(JSON.parse(sent.body));
    const attempt = rowsOf("Attempts").filter({ hasText: "400" });
    await attempt.waitFor();
    expect(await attempt.textContent()).toContain("permanent failure");
    expect(await attempt.textContent()).toContain("no thanks");
    const headers = page.getByRole("table", { name: `Request headers for ${receiver.url}` });
    expect(await headers.getByRole("row").filter({ hasText: "X-Team" }).textContent()).toContain("growth");
    expect(await headers.textContent()).not.toContain("s3cret");

    // The endpoint recovers; replay everything the filter matches.
    receiver.respond = () => ({ status: 200, body: "ok" });
    await page.goBack();
    await page.getByRole("button", { name: "Retry all matching" }).click();
    // The job's progress: it ends done, having replayed both.
    await page.getByRole("status").filter({ hasText: "Retried 2 of 2 matching deliveries. Done." }).waitFor();
    await filters.getByLabel("User ID").fill("refused-user");
    await filters.getByLabel("Status").selectOption("");
    await filters.getByRole("button", { name: "Search" }).click();
    // The list refreshes itself while deliveries are open.
    const delivered = rowsOf("Deliveries").filter({ hasText: "delivered" });
    await delivered.nth(1).waitFor({ timeout: 15_000 });
    expect(await rowsOf("Deliveries").filter({ hasText: "refused-user" }).count()).toBe(2);
    expect(receiver.requests.filter((r) => r.body.includes("msg-refused-1"))).toHaveLength(2);
  });

  test("retries one delivery from its detail page", async ({ server, receiver }) => {
    receiver.respond = () => ({ status: 410, body: "gone" });
    const finished = server.waitForDeliveries(1);
    await track(server, "single-user", "Cancelled", "msg-single");
    await finished;
    receiver.respond = () => ({ status: 200, body: "ok" });
    const [row] = (await server.deliveries.listDeliveries({ destinationId, messageId: "msg-single" })).deliveries;
    await page.goto(`${server.url}/console/deliveries/${row!.id}`);
    await page.getByRole("button", { name: "Retry", exact: true }).click();
    await rowsOf("Attempts").filter({ hasText: "success" }).waitFor({ timeout: 15_000 });
    expect(await rowsOf("Attempts").filter({ hasText: "410" }).count()).toBe(1);
  });

  test("draws a per-minute chart for each destination on the Overview", async () => {
    await nav("Overview").click();
    const card = page.getByRole("article", { name: "receiver" });
    const canvas = card.locator("canvas").first();
    await canvas.waitFor();
    const box = await canvas.boundingBox();
    expect(box!.width).toBeGreaterThan(100);
    expect(box!.height).toBeGreaterThan(50);
    const lastHour = card.getByRole("row", { name: /Last hour/ });
    // 2 delivered at once, 2 after the replay, 1 after its retry.
    expect((await lastHour.getByRole("cell").allTextContents()).slice(0, 1)).toEqual(["5"]);
    if (process.env.WAYPOST_SCREENSHOT === "1") {
      mkdirSync("docs", { recursive: true });
      const bottom = (await card.boundingBox())!;
      await page.screenshot({
        path: "docs/console.png",
        clip: { x: 0, y: 0, width: 1360, height: Math.ceil(bottom.y + bottom.height + 20) },
      });
    }
  });

  test("Live shows a delivery within 2 s of it finishing, and pauses", async ({ server }) => {
    await nav("Live").click();
    await page.getByRole("status").filter({ hasText: "Following deliveries" }).waitFor();
    let finished = server.waitForDeliveries(1);
    await track(server, "live-user", "Watched", "msg-live-1");
    await finished;
    await rowsOf("Finished deliveries").filter({ hasText: "msg-live-1" }).waitFor({ timeout: 2_000 });

    await page.getByRole("button", { name: "Pause" }).click();
    finished = server.waitForDeliveries(1);
    await track(server, "live-user", "Watched", "msg-live-2");
    await finished;
    await page.getByRole("button", { name: "Resume" }).click();
    await rowsOf("Finished deliveries").filter({ hasText: "msg-live-2" }).waitFor({ timeout: 2_000 });
    // Newest first.
    const texts = await rowsOf("Finished deliveries").allTextContents();
    expect(texts.findIndex((t) => t.includes("msg-live-2"))).toBeLessThan(texts.findIndex((t) => t.includes("msg-live-1")));
  });

  test("lists audiences and deletion requests", async () => {
    await nav("Deletions").click();
    await page.getByLabel("User ID").fill("live-user");
    await page.getByRole("button", { name: "Create deletion request" }).click();
    const row = rowsOf("Deletion requests").filter({ hasText: "live-user" });
    await row.waitFor();
    expect(await row.textContent()).toMatch(/in progress|completed/);
    await nav("Audiences").click();
    await page.getByRole("heading", { name: "Audiences" }).waitFor();
    await rowsOf("Audiences").filter({ hasText: "No audiences yet." }).waitFor();
  });

  test("edits a destination (rename, clear the secret), disables and enables it, and rotates a write key", async ({ server }) => {
    await nav("Destinations").click();
    await page.getByRole("link", { name: "Edit receiver" }).click();
    await page.getByLabel("Name", { exact: true }).fill("receiver (main)");
    await page.getByRole("radio", { name: "Clear it" }).check();
    await page.getByRole("button", { name: "Save destination" }).click();
    const row = rowsOf("Destinations").filter({ hasText: "receiver (main)" });
    await row.waitFor();
    expect(await row.getByRole("cell").nth(5).textContent()).toBe("none");

    await page.getByRole("button", { name: "Disable receiver (main)" }).click();
    await row.getByRole("cell", { name: "disabled", exact: true }).waitFor();
    expect((await server.destinations.getDestination({ id: destinationId })).destination!.enabled).toBe(false);
    await page.getByRole("button", { name: "Enable receiver (main)" }).click();
    await row.getByRole("cell", { name: "enabled", exact: true }).waitFor();
    const stored = (await server.destinations.getDestination({ id: destinationId })).destination!;
    expect(stored).toMatchObject({ name: "receiver (main)", enabled: true, hasSharedSecret: false });

    await nav("Sources").click();
    await page.getByRole("button", { name: "Rotate key of web" }).click();
    const rotated = (await page.getByLabel("New write key of web.").textContent()) ?? "";
    expect(rotated).not.toBe(writeKey);
    const old = await fetch(`${server.url}/v1/track`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Basic ${btoa(`${writeKey}:`)}` },
      body: JSON.stringify({ userId: "u", event: "e" }),
    });
    expect(old.status).toBe(401);
  });

  test("ran without page errors or Content-Security-Policy violations", () => {
    expect(pageErrors).toEqual([]);
    expect(cspViolations).toEqual([]);
  });
});
