import { createClient } from "@connectrpc/connect";
import type { Locator, Page } from "playwright-core";
import { afterAll, expect } from "vitest";
import { PlanMode, TrackingPlanService } from "../../gen/waypost/v1/tracking_plan_pb.js";
import { openConsole, type ConsolePage } from "../helpers/console-page.js";
import { testWith } from "../helpers/fixtures.js";
import { checkoutPlan } from "../plans/fixtures.js";
import { adminTransport } from "../plans/support.js";

/** A source with the checkout plan in observe mode and a few calls that break it, as the console shows them. */
let console_: ConsolePage;
let page: Page;

const cells = (row: Locator) => row.getByRole("cell").allTextContents();
/** The plan as a file in git might hold it: four-space indent, no final newline. */
const checkoutText = JSON.stringify(checkoutPlan, null, 4);

const test = testWith();
test.beforeAll(async ({ server }) => {
  const source = await server.createSource("shop");
  await server.createSource("blog");
  await createClient(TrackingPlanService, adminTransport(server)).setTrackingPlan({
    sourceId: source.id,
    planJson: checkoutText,
    mode: PlanMode.OBSERVE,
  });
  const tracking = server.tracking(source.writeKey);
  for (let i = 0; i < 3; i++) {
    await tracking.track({ track: { userId: "u1", event: "Order Completed", properties: { total: "9.99", currency: "EUR" } } });
  }
  await tracking.track({ track: { userId: "u1", event: "Refund Issued" } });
  console_ = await openConsole(server);
  page = console_.page;
});
afterAll(async () => {
  await console_?.browser.close();
});

test("the Tracking plans page lists each source's mode; a source's page shows its plan and violations with counts", async () => {
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Tracking plans", exact: true }).click();
  const plans = page.getByRole("table", { name: "Tracking plans" });
  await expect.poll(() => cells(plans.getByRole("row", { name: /shop/ }))).toEqual(["shop", "Shop", "observe", "2"]);
  expect(await cells(plans.getByRole("row", { name: /blog/ }))).toEqual(["blog", "none", "off", "0"]);

  await plans.getByRole("link", { name: "shop" }).click();
  await page.getByRole("heading", { name: "Tracking plan of shop" }).waitFor();
  expect(await page.getByTestId("plan-mode").textContent()).toBe("observe");
  const violations = page.getByRole("table", { name: "Violations" });
  await expect.poll(() => violations.getByRole("row").count()).toBe(3);
  expect((await cells(violations.getByRole("row").nth(1))).slice(0, 7)).toEqual([
    "3",
    "wrong type",
    "track",
    "Order Completed",
    "properties.total",
    "must be number",
    '"9.99"',
  ]);
  expect((await cells(violations.getByRole("row").nth(2))).slice(0, 5)).toEqual([
    "1",
    "unplanned event",
    "track",
    "Refund Issued",
    "event",
  ]);
  // The plan as it was applied, byte for byte.
  expect(await page.getByTestId("plan-document").textContent()).toBe(checkoutText);
  expect(console_.problems).toEqual([]);
});

test("each source on the Sources page links to its tracking plan", async () => {
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Sources", exact: true }).click();
  await page.getByRole("link", { name: "Tracking plan of blog" }).click();
  await page.getByRole("heading", { name: "Tracking plan of blog" }).waitFor();
  expect(await page.getByTestId("plan-mode").textContent()).toBe("off");
  await expect.poll(() => page.getByRole("table", { name: "Violations" }).textContent()).toContain("No violations recorded.");
});
