import { afterAll, describe, expect } from "vitest";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { DestinationHealth, Ordering } from "../../gen/waypost/v1/destination_pb.js";
import { launchBrowser } from "../helpers/browser.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";

/**
 * The destination form's flow control and signing-secret areas, and the
 * Destinations list's health, rate limit and ordering, in Debian's Chromium
 * against a real Waypost. What the form saved is read back with
 * GetDestination; elements are found by role and accessible name.
 */
const test = testWith();

describe("destination settings in the console", () => {
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let sourceId = "";
  let destinationId = "";
  const pageErrors: string[] = [];

  test.beforeAll(async ({ server }) => {
    sourceId = (await server.createSource("web")).id;
    browser = await launchBrowser();
    // The Copy button writes to the clipboard; the test reads it back.
    context = await browser.newContext({ viewport: { width: 1500, height: 1000 }, permissions: ["clipboard-read", "clipboard-write"] });
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    page.on("pageerror", (error) => pageErrors.push(String(error)));
    page.on("dialog", (dialog) => void dialog.accept());
    await page.goto(`${server.url}/console/`);
    await page.getByLabel("Admin token").fill(server.adminToken);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("navigation", { name: "Main" }).waitFor();
  });
  afterAll(async () => {
    await browser?.close();
  });

  const stored = async (server: TestServer, id: string) => (await server.destinations.getDestination({ id })).destination!;
  const rowOf = (name: string) => page.getByRole("table", { name: "Destinations" }).getByRole("row").filter({ hasText: name });
  const rateLimit = () => page.getByRole("textbox", { name: "Rate limit (requests per second)" });

  test("shows the server's error beside an invalid rate limit, then creates with a rate limit, per-user ordering and a generated secret shown once", async ({
    server,
    receiver,
  }) => {
    await page.goto(`${server.url}/console/destinations/new`);
    await page.getByLabel("Name", { exact: true }).fill("paced");
    await page.getByRole("checkbox", { name: "web", exact: true }).check();
    await page.getByRole("textbox", { name: "Webhook 1 URL" }).fill(receiver.url);

    // Over the server's maximum: its message, under the field.
    await rateLimit().fill("1000000");
    await page.getByRole("button", { name: "Create destination" }).click();
    await page.locator("#error-maxRequestsPerSecond").waitFor();
    expect(await rateLimit().getAttribute("aria-invalid")).toBe("true");
    const described = page.locator(`#${await rateLimit().getAttribute("aria-describedby")}`);
    expect(await described.textContent()).toMatch(/whole number from 0 \(no limit\) to 100000, got 1000000/);
    // Not a number at all: refused before sending, in the same place.
    await rateLimit().fill("-3");
    await page.getByRole("button", { name: "Create destination" }).click();
    await page.locator("#error-maxRequestsPerSecond").filter({ hasText: "must be a whole number of requests per second" }).waitFor();
    expect((await server.destinations.listDestinations({})).destinations).toEqual([]);

    await rateLimit().fill("50");
    await page.getByRole("combobox", { name: "Ordering" }).selectOption({ label: "Per user" });
    await page.getByRole("checkbox", { name: "Generate signing secret" }).check();
    await page.getByRole("button", { name: "Create destination" }).click();
    const secretElement = page.getByLabel("Signing secret of paced.");
    const secret = (await secretElement.textContent()) ?? "";
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{40,}={0,2}$/);
    await page.getByRole("button", { name: "Copy" }).click();
    await page.getByRole("button", { name: "Copied" }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);

    const [created] = (await server.destinations.listDestinations({})).destinations;
    destinationId = created!.id;
    expect(await stored(server, destinationId)).toMatchObject({
      name: "paced",
      maxRequestsPerSecond: 50,
      ordering: Ordering.PER_USER,
      hasSigningSecret: true,
    });

    // Done: the list, and the secret is gone for good.
    await page.getByRole("button", { name: "Done" }).click();
    const row = rowOf("paced");
    await row.waitFor();
    expect(await row.getByRole("cell").allTextContents()).toEqual(expect.arrayContaining(["Healthy", "set", "50/s", "Per user"]));
    expect(await page.content()).not.toContain(secret);
  });

  test("edits the rate limit and ordering with an update mask, and rotates the signing secret (shown once) without an etag conflict", async ({
    server,
    receiver,
  }) => {
    await page.goto(`${server.url}/console/destinations/${destinationId}`);
    await page.getByText("Signing secret: set").waitFor();
    expect(await rateLimit().inputValue()).toBe("50");
    expect(await page.getByRole("combobox", { name: "Ordering" }).inputValue()).toBe("per-user");

    await page.getByRole("button", { name: "Rotate signing secret" }).click();
    const rotated = (await page.getByLabel("New signing secret of paced.").textContent()) ?? "";
    expect(rotated).toMatch(/^whsec_/);
    await page.getByRole("button", { name: "Done" }).click();
    await page.getByLabel("New signing secret of paced.").waitFor({ state: "detached" });
    expect(await page.content()).not.toContain(rotated);

    // Saving after the rotation sends the etag the rotation returned.
    await rateLimit().fill("0");
    await page.getByRole("combobox", { name: "Ordering" }).selectOption({ label: "None" });
    await page.getByRole("button", { name: "Save destination" }).click();
    const row = rowOf("paced");
    await row.waitFor();
    expect(await row.getByRole("cell").allTextContents()).toEqual(expect.arrayContaining(["none", "None"]));
    expect(await stored(server, destinationId)).toMatchObject({
      maxRequestsPerSecond: 0,
      ordering: Ordering.NONE,
      hasSigningSecret: true,
      webhooks: [{ url: receiver.url }],
    });

    // A fresh edit page says a secret is set, never which.
    await page.goto(`${server.url}/console/destinations/${destinationId}`);
    await page.getByText("Signing secret: set").waitFor();
    expect(await page.content()).not.toContain(rotated);
  });

  test("shows Circuit open in the Health column for a destination whose breaker is open", async ({ server, receiver }) => {
    const down = await server.createDestination({ name: "down", sourceIds: [sourceId], webhooks: [{ url: receiver.url }] });
    const now = server.clock.now();
    // The breaker's row as it writes it when it opens: open, with a probe time and its cooldown.
    await server.pool.query(
      `INSERT INTO destination_health
         (destination_id, state, consecutive_failures, first_failure_at, opened_at, cooldown_ms, probe_at,
          last_failure_at, last_error, updated_at)
       VALUES ($1, 'open', 5, $2, $2, 30000, $3, $2, 'HTTP 503', $2)`,
      [down.id, now, new Date(now.getTime() + 30_000)],
    );
    expect((await stored(server, down.id)).health).toBe(DestinationHealth.CIRCUIT_OPEN);
    await page.goto(`${server.url}/console/destinations`);
    await rowOf("down").getByRole("cell", { name: "Circuit open", exact: true }).waitFor();
    await rowOf("paced").getByRole("cell", { name: "Healthy", exact: true }).waitFor();
  });

  test("the edit form shows a credential header as [masked]; saving another change keeps the stored value", async ({
    server,
    receiver,
  }) => {
    const keyed = await server.createDestination({
      name: "keyed",
      sourceIds: [sourceId],
      webhooks: [{ url: receiver.url, headers: { Authorization: "Bearer console-credential", "X-Team": "growth" } }],
    });
    await page.goto(`${server.url}/console/destinations/${keyed.id}`);
    // Stored as jsonb, whose keys come back shortest first.
    const credentialValue = page.getByRole("textbox", { name: "Webhook 1 header 2 value" });
    await credentialValue.waitFor();
    expect(await page.getByRole("textbox", { name: "Webhook 1 header 2 name" }).inputValue()).toBe("Authorization");
    expect(await credentialValue.inputValue()).toBe("[masked]");
    expect(await page.getByRole("textbox", { name: "Webhook 1 header 1 value" }).inputValue()).toBe("growth");
    expect(await page.content()).not.toContain("console-credential");

    await page.getByLabel("Name", { exact: true }).fill("keyed renamed");
    await page.getByRole("button", { name: "Save destination" }).click();
    await rowOf("keyed renamed").waitFor();
    const row = await server.pool.query("SELECT webhooks FROM destinations WHERE id = $1", [keyed.id]);
    expect(row.rows[0].webhooks[0].headers).toEqual({ Authorization: "Bearer console-credential", "X-Team": "growth" });
  });

  test("ran without page errors", () => {
    expect(pageErrors).toEqual([]);
  });
});
