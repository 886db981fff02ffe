import { afterAll, expect } from "vitest";
import type { Page } from "playwright-core";
import { DeliveryStatus } from "../../gen/waypost/v1/delivery_pb.js";
import { DestinationHealth } from "../../gen/waypost/v1/destination_pb.js";
import { openConsole, type ConsolePage } from "../helpers/console-page.js";
import { testWith } from "../helpers/fixtures.js";
import { healthConfig, testCircuit, trackAndRecord } from "../health/support.js";

/**
 * An endpoint that answers 500 to everything, as the console shows it: its
 * deliveries are retrying (none has failed or expired yet) and its circuit
 * is open. Three failures in a row open it; no probe comes due during the
 * test (an hour's cooldown), so what the pages show follows from the steps.
 */
const hour = 3_600_000;
let console_: ConsolePage;
let page: Page;
let destinationId: string;
let sourceId: string;
let heldId: string;

const config = healthConfig();
config.delivery = { ...config.delivery, circuit: { ...testCircuit, minSpanMs: 0, cooldownMs: hour, maxCooldownMs: hour } };
const test = testWith({ server: { config }, receiver: { respond: () => ({ status: 500, body: "boom" }) } });
test.beforeAll(async ({ server, receiver: dead }) => {
  const source = await server.createSource("shop");
  sourceId = source.id;
  destinationId = (await server.createDestination({ name: "dead hook", sourceIds: [source.id], webhooks: [{ url: dead.url }] })).id;
  for (let i = 0; i < 3; i++) await trackAndRecord(server, source.writeKey, `failing-${i}`);
  const { destination } = await server.destinations.getDestination({ id: destinationId });
  expect(destination!.health).toBe(DestinationHealth.CIRCUIT_OPEN);
  // Accepted while the circuit is open: due, but held.
  const { messageId } = await server
    .tracking(source.writeKey)
    .track({ track: { userId: "held-user", event: "Held", properties: { plan: "pro", seats: 3 } } });
  const { deliveries } = await server.deliveries.listDeliveries({ destinationId, messageId });
  heldId = deliveries[0]!.id;
  expect(deliveries[0]!.status).toBe(DeliveryStatus.PENDING);
  console_ = await openConsole(server);
  page = console_.page;
});
afterAll(async () => {
  await console_?.browser.close();
});

test("the Overview counts and charts the failed attempts of an endpoint whose deliveries are all still retrying", async () => {
  const card = page.getByRole("article", { name: "dead hook" });
  const lastHour = card.getByRole("row", { name: /Last hour/ });
  await lastHour.waitFor();
  // Delivered, failed, expired, filtered, failed attempts, success rate.
  expect((await lastHour.getByRole("cell").allTextContents()).slice(0, 6)).toEqual(["0", "0", "0", "0", "3 of 3", "–"]);
  await card.getByRole("row", { name: /Last 6 h/ }).waitFor();
  await card.getByRole("row", { name: /Last 24 h/ }).waitFor();
  await card.locator(".u-legend").getByText("Failed attempts").waitFor();

  const periods = page.getByRole("navigation", { name: "Chart period" });
  expect(await periods.getByRole("link", { name: "24 h" }).getAttribute("aria-current")).toBe("true");
  await periods.getByRole("link", { name: "6 h" }).click();
  await card.getByRole("img", { name: /over the last 6 hours, dead hook/ }).waitFor();
  expect(new URL(page.url()).searchParams.get("period")).toBe("6h");
  expect(await periods.getByRole("link", { name: "6 h" }).getAttribute("aria-current")).toBe("true");
  await page.reload();
  await card.getByRole("img", { name: /over the last 6 hours, dead hook/ }).waitFor();
});

test("a delivery held by the open circuit says so, and a disabled Retry says why", async ({ server }) => {
  await page.goto(`${server.url}/console/deliveries/${heldId}`);
  await page.getByRole("status").filter({ hasText: "Held by the open circuit" }).waitFor();
  expect(await page.getByRole("status").filter({ hasText: "Held by the open circuit" }).textContent()).toContain("The next probe is due");
  const props = page.locator("dl.props");
  expect(await props.locator("dt:has-text('Next attempt') + dd").textContent()).toBe("held (see above)");
  const retry = page.getByRole("button", { name: "Retry", exact: true });
  expect(await retry.isDisabled()).toBe(true);
  const hint = page.locator(`#${await retry.getAttribute("aria-describedby")}`);
  expect(await hint.textContent()).toMatch(/Not attempted yet/);

  // Names, linked, rather than ids.
  const destination = props.getByRole("link", { name: "dead hook" });
  expect(await destination.getAttribute("href")).toBe(`/console/destinations/${destinationId}`);
  const source = props.getByRole("link", { name: "shop" });
  expect(await source.getAttribute("href")).toBe(`/console/sources#source-${sourceId}`);
});

test("the body is indented for reading, and Copy body copies the exact bytes sent", async ({ server }) => {
  const { delivery } = await server.deliveries.getDelivery({ id: heldId });
  const shown = (await page.getByLabel("Body", { exact: true }).textContent())!;
  expect(shown).toBe(JSON.stringify(JSON.parse(delivery!.body), null, 2));
  expect(shown).not.toBe(delivery!.body);
  await page.getByRole("button", { name: "Copy body" }).click();
  await page.getByRole("button", { name: "Copied" }).waitFor();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(delivery!.body);
});

test("the Deliveries list links each destination by name", async ({ server }) => {
  await page.goto(`${server.url}/console/deliveries?destination=${destinationId}`);
  const row = page.getByRole("table", { name: "Deliveries" }).getByRole("row").filter({ hasText: "held-user" });
  const link = row.getByRole("link", { name: "dead hook" });
  await link.waitFor();
  expect(await link.getAttribute("href")).toBe(`/console/destinations/${destinationId}`);
});

test("ran without page errors or Content-Security-Policy violations", () => {
  expect(console_.problems).toEqual([]);
});
