import { createClient } from "@connectrpc/connect";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { PlanMode, TrackingPlanService } from "../../gen/waypost/v1/tracking_plan_pb.js";
import { openConsole, type ConsolePage } from "../helpers/console-page.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { checkoutPlan } from "../plans/fixtures.js";
import { adminTransport } from "../plans/support.js";

/** A source with the checkout plan in observe mode and a few calls that break it, as the console shows them. */
let server: TestServer;
let console_: ConsolePage;
let page: Page;

beforeAll(async () => {
  server = await startTestServer();
  const source = await server.createSource("shop");
  await server.createSource("blog");
  await createClient(TrackingPlanService, adminTransport(server)).setTrackingPlan({ sourceId: source.id, plan: checkoutPlan, mode: PlanMode.OBSERVE });
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
  await server?.stop();
});

test("the Tracking plans page lists each source's mode; a source's page shows its plan and violations with counts", async () => {
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Tracking plans", exact: true }).click();
  const plans = page.getByRole("table", { name: "Tracking plans" });
  await expect.poll(() => plans.getByRole("row", { name: /shop/ }).innerText()).toMatch(/shop\s+Shop\s+observe\s+2/);
  expect(await plans.getByRole("row", { name: /blog/ }).innerText()).toMatch(/blog\s+none\s+off\s+0/);

  await plans.getByRole("link", { name: "shop" }).click();
  await page.getByRole("heading", { name: "Tracking plan of shop" }).waitFor();
  expect(await page.getByTestId("plan-mode").innerText()).toBe("observe");
  const violations = page.getByRole("table", { name: "Violations" });
  await expect.poll(() => violations.getByRole("row").count()).toBe(3);
  expect(await violations.getByRole("row").nth(1).innerText()).toMatch(/^3\s+wrong type\s+track\s+Order Completed\s+properties\.total\s+must be number\s+"9\.99"/);
  expect(await violations.getByRole("row").nth(2).innerText()).toMatch(/^1\s+unplanned event\s+track\s+Refund Issued\s+event/);
  expect(await page.getByLabel("Plan document").innerText()).toContain('"Order Completed"');
  expect(console_.problems).toEqual([]);
});

test("each source on the Sources page links to its tracking plan", async () => {
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Sources", exact: true }).click();
  await page.getByRole("link", { name: "Tracking plan of blog" }).click();
  await page.getByRole("heading", { name: "Tracking plan of blog" }).waitFor();
  expect(await page.getByTestId("plan-mode").innerText()).toBe("off");
  await expect.poll(() => page.getByRole("table", { name: "Violations" }).innerText()).toContain("No violations recorded.");
});
