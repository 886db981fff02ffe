import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { DestinationKind } from "../../gen/waypost/v1/destination_pb.js";
import { openConsole, type ConsolePage } from "../helpers/console-page.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { startVendorStandIn, type VendorStandIn } from "../helpers/vendor-stand-in.js";

/**
 * An integration destination made in the console, in Debian's Chromium
 * against a real Waypost: the catalog picker's search, the settings form
 * built from the entry's fields (a secret as a password input, the server's
 * "required" under its field), the entry's presets as the subscriptions, a
 * mapping that is not JSON refused in the page, Test against recent calls
 * on the draft showing the vendor requests, and the saved destination's page
 * with the secret masked; a delivery's attempts named by subscription and
 * method. Vendors are a loopback stand-in reached through the proxy setting.
 * What was saved is read back with GetDestination.
 */
describe("integration destinations in the console", () => {
  let server: TestServer;
  let vendor: VendorStandIn;
  let consolePage: ConsolePage;
  let page: Page;
  let source = { id: "", writeKey: "" };

  beforeAll(async () => {
    vendor = await startVendorStandIn();
    server = await startTestServer({ config: { outbound: { httpsProxy: vendor.proxyUrl } }, ca: vendor.caPem });
    source = await server.createSource("web");
    consolePage = await openConsole(server);
    page = consolePage.page;
  });
  afterAll(async () => {
    await consolePage?.browser.close();
    await server?.stop();
    await vendor?.close();
  });

  const catalog = () => page.getByRole("list", { name: "Catalog entries" });
  const setting = (label: string) => page.getByLabel(label, { exact: false });

  it("searches the catalog, builds the settings form, pre-fills the presets and tests the draft against recent calls", async () => {
    const tracking = server.tracking(source.writeKey);
    const played = await tracking.track({ track: { userId: "u1", event: "Song Played", properties: { title: "Blue" } } });
    // Mixpanel's presets have no alias subscription.
    const aliased = await tracking.alias({ alias: { userId: "u1", previousId: "anon-9" } });

    await page.goto(`${server.url}/console/destinations/new`);
    await page.getByLabel("Name", { exact: true }).fill("mixpanel");
    await page.getByRole("checkbox", { name: "web", exact: true }).check();
    await page.getByRole("combobox", { name: "Kind" }).selectOption("integration");

    // The search narrows the list by name and slug, case-insensitively.
    const search = page.getByRole("searchbox", { name: "Search the catalog" });
    await search.fill("MIXPANEL");
    await catalog().getByRole("button", { name: "Use Mixpanel (Actions) (mixpanel)" }).waitFor();
    expect(await catalog().getByRole("button", { name: /slack/i }).count()).toBe(0);
    await search.fill("slack");
    await catalog()
      .getByRole("button", { name: /\(slack\)$/ })
      .waitFor();
    expect(
      await catalog()
        .getByRole("button", { name: /mixpanel/i })
        .count(),
    ).toBe(0);
    await search.fill("mixpanel");
    await catalog().getByRole("button", { name: "Use Mixpanel (Actions) (mixpanel)" }).click();

    // The entry's settings: a required text field, a secret as a password input, a menu of choices.
    const token = setting("Project Token");
    const secret = setting("Secret Key");
    await secret.waitFor();
    expect(await secret.getAttribute("type")).toBe("password");
    expect(await token.getAttribute("aria-required")).toBe("true");
    const region = page.getByRole("combobox", { name: "Data Residency" });
    expect((await region.locator("option").allTextContents()).length).toBeGreaterThanOrEqual(3);

    // The presets, pre-filled: one subscription each, with the entry's actions as the menu.
    const presets = ["Track Calls", "Order Completed Calls", "Page Calls", "Screen Calls", "Identify Calls", "Group Calls"];
    for (const [i, name] of presets.entries()) {
      expect(await page.getByRole("textbox", { name: `Subscription ${i + 1} name` }).inputValue()).toBe(name);
    }
    expect(await page.getByRole("textbox", { name: "Subscription 1 subscribe" }).inputValue()).toBe(
      'type = "track" and event != "Order Completed"',
    );
    expect(await page.getByRole("combobox", { name: "Subscription 1 action" }).inputValue()).toBe("trackEvent");
    // Only the presets' names: nothing typed yet.
    await page.getByText("Presets of Mixpanel (Actions): Track Calls, Order Completed Calls").waitFor();

    // A mapping that is not JSON is said so as typed, and nothing is sent.
    const mapping = page.getByRole("textbox", { name: "Subscription 5 mapping" });
    await mapping.fill("{ not json");
    await page.getByText(/^Mapping is not JSON/).waitFor();
    await page.getByRole("button", { name: "Create destination" }).click();
    expect(await mapping.getAttribute("aria-invalid")).toBe("true");
    expect((await server.destinations.listDestinations({})).destinations).toEqual([]);
    await mapping.fill("");

    // Required settings left empty: the server's message, under the field it names.
    await page.getByRole("button", { name: "Create destination" }).click();
    const refused = page.locator('[id^="error-integration_settings_"]');
    await refused.first().waitFor();
    expect(await refused.first().textContent()).toMatch(/required/);
    const refusedId = (await refused.first().getAttribute("id")) ?? "";
    expect(await page.locator(`[aria-describedby="${refusedId}"]`).getAttribute("aria-invalid")).toBe("true");
    expect((await server.destinations.listDestinations({})).destinations).toEqual([]);

    await token.fill("tok-123");
    await secret.fill("sekret-456");

    // A subscription the catalog's language does not parse: the server's message, under that subscription's field.
    const subscribe = page.getByRole("textbox", { name: "Subscription 3 subscribe" });
    await subscribe.fill('typo "page"');
    await page.getByRole("button", { name: "Create destination" }).click();
    await page.locator("#error-integration_subscriptions_2__subscribe").waitFor();
    expect(await subscribe.getAttribute("aria-invalid")).toBe("true");
    expect((await server.destinations.listDestinations({})).destinations).toEqual([]);
    await subscribe.fill('type = "page"');

    // Test against recent calls: a mapping the action refuses is that call's action error, with its message.
    const test = page.getByRole("button", { name: "Test against recent calls" });
    const results = page.getByRole("table", { name: "Test results" });
    const row = results.getByRole("row").filter({ hasText: played.messageId });
    const trackMapping = page.getByRole("textbox", { name: "Subscription 1 mapping" });
    await trackMapping.fill('{"event": {"@path": "$.properties.nowhere"}}');
    await test.click();
    await row.filter({ hasText: "Action error" }).filter({ hasText: "Track Calls" }).waitFor();
    await results
      .getByRole("row")
      .filter({ hasText: aliased.messageId })
      .filter({ hasText: "No subscription matched" })
      .filter({ hasText: "No enabled subscription matches this call" })
      .waitFor();

    // With the preset's mapping: the draft's requests for the stored call, nothing sent.
    await trackMapping.fill("");
    expect(await results.count()).toBe(0);
    await test.click();
    await row.filter({ hasText: "Send" }).waitFor();
    const requests = row.getByRole("list", { name: `Requests for ${played.messageId}` });
    await requests.waitFor();
    const text = (await requests.textContent()) ?? "";
    expect(text).toContain("Track Calls");
    expect(text).toMatch(/POST https:\/\/api(-[a-z]+)?\.mixpanel\.com\//);
    expect(text).toContain("Song Played");
    expect(text).not.toContain("sekret-456");
    expect(vendor.requests).toEqual([]);

    // Remove the group preset, then create.
    await page.getByRole("button", { name: "Remove subscription 6" }).click();
    await page.getByRole("button", { name: "Create destination" }).click();
    await page.getByRole("table", { name: "Destinations" }).waitFor();
    const [created] = (await server.destinations.listDestinations({})).destinations;
    expect(created!.kind).toBe(DestinationKind.INTEGRATION);
    expect(created!.integration?.slug).toBe("mixpanel");
    expect(created!.integration?.settings).toMatchObject({ projectToken: "tok-123", apiSecret: "***" });
    expect(created!.integration?.subscriptions.map((s) => s.name)).toEqual(presets.slice(0, 5));
  });

  it("shows the destination's entry, settings with the secret masked and subscriptions, and keeps the secret on save", async () => {
    const [created] = (await server.destinations.listDestinations({})).destinations;
    await page.goto(`${server.url}/console/destinations/${created!.id}`);
    const summary = page.getByRole("region", { name: "Integration" });
    await summary.getByText("Mixpanel (Actions)").waitFor();
    expect(await summary.textContent()).toContain("mixpanel");
    expect(await summary.textContent()).toContain("tok-123");
    expect(await summary.textContent()).toContain("*** (stored)");
    const subscriptions = summary.getByRole("table", { name: "Subscriptions" });
    await subscriptions.getByRole("row").filter({ hasText: "Identify Calls" }).waitFor();
    // A preset's long mapping is folded to its number of fields.
    await subscriptions
      .getByRole("row")
      .filter({ hasText: "Order Completed Calls" })
      .getByText(/^\d+ fields$/)
      .waitFor();
    expect(await page.content()).not.toContain("sekret-456");

    // The form: the entry fixed (no picker), the secret's mask in its password input.
    expect(await page.getByRole("searchbox", { name: "Search the catalog" }).count()).toBe(0);
    const secret = setting("Secret Key");
    expect(await secret.inputValue()).toBe("***");
    await page.getByRole("checkbox", { name: "Subscription 2 enabled" }).uncheck();
    await page.getByRole("button", { name: "Save destination" }).click();
    await page.getByRole("table", { name: "Destinations" }).waitFor();
    const saved = (await server.destinations.getDestination({ id: created!.id })).destination!;
    expect(saved.integration?.secretSettings).toContain("apiSecret");
    expect(saved.integration?.subscriptions[1]).toMatchObject({ name: "Order Completed Calls", enabled: false });
    // "***" sent back kept the stored secret.
    const row = await server.pool.query<{ secret: string }>(
      "SELECT integration->'settings'->>'apiSecret' AS secret FROM destinations WHERE id = $1",
      [created!.id],
    );
    expect(row.rows[0]!.secret).toBe("sekret-456");
    expect(consolePage.problems).toEqual([]);
  });

  it("adds and removes subscriptions for an entry without presets, whose create without one is refused", async () => {
    await page.goto(`${server.url}/console/destinations/new`);
    await page.getByLabel("Name", { exact: true }).fill("slack");
    await page.getByRole("combobox", { name: "Kind" }).selectOption("integration");
    await page.getByRole("searchbox", { name: "Search the catalog" }).fill("slack");
    await catalog()
      .getByRole("button", { name: /\(slack\)$/ })
      .click();
    await page.getByText("This entry has no presets").waitFor();
    expect(await page.getByRole("textbox", { name: "Subscription 1 name" }).count()).toBe(0);

    // None: the server's refusal, under the subscriptions.
    await page.getByRole("button", { name: "Create destination" }).click();
    await page.locator("#error-integration_subscriptions").filter({ hasText: "required" }).waitFor();

    await page.getByRole("button", { name: "Add subscription" }).click();
    await page.getByRole("button", { name: "Add subscription" }).click();
    await page.getByRole("button", { name: "Remove subscription 1" }).click();
    expect(await page.getByRole("textbox", { name: "Subscription 2 name" }).count()).toBe(0);
    await page.getByRole("textbox", { name: "Subscription 1 name" }).fill("Orders");
    await page.getByRole("textbox", { name: "Subscription 1 subscribe" }).fill('event = "Order Completed"');
    expect(await page.getByRole("combobox", { name: "Subscription 1 action" }).inputValue()).toBe("postToChannel");
    await page
      .getByRole("textbox", { name: "Subscription 1 mapping" })
      .fill('{"url": "https://hooks.slack.com/services/T0/B0/X", "text": {"@template": "{{userId}} ordered"}}');
    await page.getByRole("button", { name: "Create destination" }).click();
    await page.getByRole("table", { name: "Destinations" }).waitFor();
    const slack = (await server.destinations.listDestinations({})).destinations.find((d) => d.name === "slack");
    expect(slack?.integration?.subscriptions).toEqual([
      expect.objectContaining({
        name: "Orders",
        subscribe: 'event = "Order Completed"',
        action: "postToChannel",
        mapping: { url: "https://hooks.slack.com/services/T0/B0/X", text: { "@template": "{{userId}} ordered" } },
        enabled: true,
      }),
    ]);
  });

  it("shows a delivery's attempts with the subscription and method of each request", async () => {
    const created = (await server.destinations.listDestinations({})).destinations.find((d) => d.name === "mixpanel");
    const done = server.waitForDeliveries(1, ["delivered"]);
    const { messageId } = await server.tracking(source.writeKey).track({ track: { userId: "u2", event: "Song Skipped" } });
    await done;
    await vendor.waitForRequests(1);
    const [delivery] = (await server.deliveries.listDeliveries({ destinationId: created!.id, messageId })).deliveries;
    await page.goto(`${server.url}/console/deliveries/${delivery!.id}`);
    const attempts = page.getByRole("table", { name: "Attempts" });
    await attempts.getByRole("columnheader", { name: "Subscription" }).waitFor();
    await attempts.getByRole("columnheader", { name: "Method" }).waitFor();
    const attempt = attempts.getByRole("row").filter({ hasText: "Track Calls" });
    expect(await attempt.getByRole("cell").nth(3).textContent()).toBe("POST");
    expect(await attempt.textContent()).toMatch(/https:\/\/api(-[a-z]+)?\.mixpanel\.com\//);
    expect(await attempt.textContent()).toContain("success");
    // The body shown is the call as stored, named so; what was sent is each request, with its headers and body.
    await page.getByRole("heading", { name: "Call", exact: true }).waitFor();
    expect(await page.getByRole("heading", { name: "Body", exact: true }).count()).toBe(0);
    const sent = vendor.requests.find((r) => r.body.includes(messageId))!;
    const requests = page.getByRole("list", { name: "Requests sent" });
    expect(await requests.textContent()).toContain(`${sent.method} https://`);
    const shown = (await page.getByLabel("Body of request 1").textContent())!;
    expect(JSON.parse(shown)).toEqual(JSON.parse(sent.body));
    expect(await requests.getByRole("button", { name: "Copy body of request 1" }).count()).toBe(1);
    expect(await page.content()).not.toContain("sekret-456");
    expect(consolePage.problems).toEqual([]);
  });
});
