import { createClient } from "@connectrpc/connect";
import type { Page } from "playwright-core";
import { afterAll, expect } from "vitest";
import { Role, TokenService } from "../../gen/waypost/v1/access_pb.js";
import { type ConsolePage, openConsole } from "../helpers/console-page.js";
import { testWith } from "../helpers/fixtures.js";
import { completionsOf } from "../helpers/server.js";

/**
 * The console as a viewer: an API token with the viewer role, typed in the
 * Admin token field, sees every list and detail but none of the buttons
 * that change something, nor the pages its scopes do not reach (the audit
 * log, users). Debian's Chromium against a real Waypost.
 */
let console_: ConsolePage;
let page: Page;
let destinationId = "";
let deliveryId = "";

const test = testWith();
test.beforeAll(async ({ server, receiver }) => {
  const source = await server.createSource("shop");
  const destination = await server.createDestination({ name: "orders", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  destinationId = destination.id;
  const done = completionsOf(server, destinationId, 1);
  await server.tracking(source.writeKey).track({ track: { userId: "u", event: "Order Completed" } });
  deliveryId = (await done)[0]!.id;

  const tokens = createClient(TokenService, server.transport);
  const { secret } = await tokens.createToken(
    { token: { name: "read-only bot", role: Role.VIEWER } },
    { headers: { authorization: `Bearer ${server.adminToken}` } },
  );
  expect(secret).toMatch(/^wpt_/);
  console_ = await openConsole(server, secret);
  page = console_.page;
});
afterAll(async () => {
  await console_?.browser.close();
});

const nav = (name: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name, exact: true });
const button = (name: string) => page.getByRole("button", { name, exact: true });

test("the navigation holds the lists a viewer reads, and Tokens; not the audit log nor users", async () => {
  for (const name of ["Overview", "Sources", "Destinations", "Deliveries", "Live", "Audiences", "Deletions", "Tracking plans", "Tokens"]) {
    await nav(name).waitFor();
  }
  expect(await nav("Audit log").count()).toBe(0);
  expect(await nav("Users").count()).toBe(0);
  await page.getByText("read-only bot (viewer)").waitFor();
});

test("Destinations are listed, with nothing to create, switch off or delete; a destination's page saves nothing", async ({ server }) => {
  await nav("Destinations").click();
  await page.getByRole("table", { name: "Destinations" }).getByRole("row").filter({ hasText: "orders" }).waitFor();
  expect(await page.getByRole("link", { name: "New destination" }).count()).toBe(0);
  for (const name of ["Disable orders", "Delete orders"]) expect(await button(name).count()).toBe(0);

  await page.getByRole("link", { name: "View orders" }).click();
  await page.getByRole("heading", { name: "Destination orders" }).waitFor();
  await page.getByText("Read only: your role cannot change destinations.").waitFor();
  await page.getByRole("table", { name: "Backfills" }).waitFor();
  for (const name of ["Save destination", "Rotate signing secret", "Generate signing secret", "Test against recent calls", "Backfill"]) {
    expect(await button(name).count(), name).toBe(0);
  }

  await page.goto(`${server.url}/console/destinations/new`);
  await page.getByText("Your role cannot create destinations.").waitFor();
  expect(await button("Create destination").count()).toBe(0);
});

test("Sources, deliveries and deletions are read, never changed", async ({ server }) => {
  await nav("Sources").click();
  await page.getByRole("table", { name: "Sources" }).getByRole("row").filter({ hasText: "shop" }).waitFor();
  for (const name of ["Create source", "Rotate key of shop", "Delete shop"]) expect(await button(name).count(), name).toBe(0);

  await nav("Deliveries").click();
  await page.getByRole("link", { name: `Delivery ${deliveryId}` }).waitFor();
  expect(await button("Retry all matching").count()).toBe(0);
  await page.goto(`${server.url}/console/deliveries/${deliveryId}`);
  await page.getByRole("heading", { name: `Delivery ${deliveryId}` }).waitFor();
  await page.getByText("Order Completed").first().waitFor();
  expect(await button("Retry").count()).toBe(0);

  await nav("Deletions").click();
  await page.getByRole("table", { name: "Deletion requests" }).waitFor();
  expect(await button("Create deletion request").count()).toBe(0);
});

test("Tokens lists what the viewer may see, offering no Create token and no service accounts", async () => {
  await nav("Tokens").click();
  await page.getByRole("table", { name: "Tokens" }).waitFor();
  await page.getByText("Tokens are created by people signed in through the identity provider").waitFor();
  expect(await button("Create token").count()).toBe(0);
  expect(await page.getByLabel("Service account").count()).toBe(0);
  expect(console_.problems).toEqual([]);
});
