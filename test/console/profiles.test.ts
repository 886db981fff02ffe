import type { Locator, Page } from "playwright-core";
import { afterAll, expect } from "vitest";
import { openConsole, type ConsolePage } from "../helpers/console-page.js";
import { testWith } from "../helpers/fixtures.js";
import { completionsOf } from "../helpers/server.js";

// The Profiles pages in Chromium: a person who used a phone and a laptop
// before signing in as ada, found by an identifier's prefix and a trait,
// with their identifiers, traits, timeline across both devices (paged) and
// the merge in their history; reached too from a delivery's Profile link.

let console_: ConsolePage;
let page: Page;
let deliveryId = "";
/** A destination that takes only identify calls: ada's clicks are calls it got no delivery for. */
let identifiesId = "";
/** Calls of ada after she signed in: a page of the timeline (timelinePageSize, views/profile-timeline.tsx). */
const clicks = 20;

const test = testWith();
test.beforeAll(async ({ server, receiver }) => {
  const source = await server.createSource("web");
  const destination = await server.createDestination({ name: "hook", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  identifiesId = (
    await server.createDestination({
      name: "identifies",
      sourceIds: [source.id],
      webhooks: [{ url: receiver.url }],
      filter: { type: "identify" },
    })
  ).id;
  const tracking = server.tracking(source.writeKey);
  const done = completionsOf(server, destination.id, clicks + 5);
  await tracking.track({ track: { messageId: "m-open", anonymousId: "phone-1", event: "Opened App" } });
  await tracking.track({ track: { messageId: "m-pricing", anonymousId: "laptop-1", event: "Viewed Pricing" } });
  await tracking.identify({ identify: { messageId: "m-id-phone", userId: "ada", anonymousId: "phone-1", traits: { plan: "pro" } } });
  await tracking.identify({ identify: { messageId: "m-id-laptop", userId: "ada", anonymousId: "laptop-1" } });
  await tracking.batch({
    batch: Array.from({ length: clicks }, (_, i) => ({
      type: { case: "track" as const, value: { messageId: `m-click-${i}`, userId: "ada", event: "Clicked" } },
    })),
  });
  // Bob signs in on ada's laptop: he gets his own profile, and the laptop stays hers.
  await tracking.identify({ identify: { messageId: "m-id-bob", userId: "bob", anonymousId: "laptop-1" } });
  await done;
  await server.waypost.identity!.caughtUp();
  const { deliveries } = await server.deliveries.listDeliveries({ destinationId: destination.id, messageId: "m-id-phone" });
  deliveryId = deliveries[0]!.id;
  console_ = await openConsole(server);
  page = console_.page;
});
afterAll(async () => {
  await console_?.browser.close();
});

const cells = (row: Locator) => row.getByRole("cell").allTextContents();
const rowsOf = (table: string) => page.getByRole("table", { name: table }).getByRole("row");
/** The cell at `index` of each body row of a table. */
const column = async (table: string, index: number) =>
  (await Promise.all((await rowsOf(table).all()).slice(1).map((row) => cells(row)))).map((row) => row[index]);

test("search by an identifier's prefix, open the profile: identifiers, traits, counts, the timeline across both ids paged, the merge", async () => {
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Profiles", exact: true }).click();
  const byIdentifier = page.getByRole("search", { name: "Search by identifier" });
  await byIdentifier.getByLabel("Identifier starts with").fill("ad");
  await byIdentifier.getByLabel("Identifier type").fill("user_id");
  await byIdentifier.getByRole("button", { name: "Search identifiers" }).click();
  await expect.poll(() => rowsOf("Profiles").count()).toBe(2);
  const result = await cells(rowsOf("Profiles").nth(1));
  expect(result[1]).toContain("user_id:ada");
  expect(result[1]).toContain("anonymous_id:phone-1");
  expect(result[2]).toBe(String(clicks + 4));
  expect(page.url()).toContain("prefix=ad&type=user_id");

  const profileId = result[0]!;
  await page.getByRole("table", { name: "Profiles" }).getByRole("link", { name: profileId }).click();
  await page.getByRole("heading", { name: `Profile ${profileId}` }).waitFor();
  expect(new URL(page.url()).pathname).toBe(`/console/profiles/${profileId}`);

  await expect.poll(() => column("Identifiers", 1)).toEqual(expect.arrayContaining(["phone-1", "laptop-1", "ada"]));
  expect(await rowsOf("Identifiers").count()).toBe(4);
  const plan = await cells(rowsOf("Traits").filter({ hasText: "plan" }));
  expect([plan[0], plan[1], plan[3]]).toEqual(["plan", '"pro"', "m-id-phone"]);
  expect(plan[2]).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}Z$/);
  expect(await cells(rowsOf("Calls by event").nth(1))).toEqual(["Clicked", String(clicks)]);
  expect(await cells(rowsOf("Calls by event").filter({ hasText: "Opened App" }))).toEqual(["Opened App", "1"]);

  // The timeline: newest first, a page of clicks, then the calls of both devices before she signed in.
  await expect.poll(() => column("Timeline", 5)).toEqual(Array.from({ length: clicks }, (_, i) => `m-click-${clicks - 1 - i}`));
  expect(await cells(rowsOf("Timeline").nth(1))).toEqual([expect.any(String), "track", "Clicked", "ada", "web", `m-click-${clicks - 1}`]);
  await page.getByRole("button", { name: "Next page" }).click();
  await expect.poll(() => column("Timeline", 5)).toEqual(["m-id-laptop", "m-id-phone", "m-pricing", "m-open"]);
  expect(await column("Timeline", 2)).toEqual(["–", "–", "Viewed Pricing", "Opened App"]);
  await page.getByText("Page 2").waitFor();
  expect(await page.getByRole("button", { name: "Next page" }).isDisabled()).toBe(true);

  // The history: both devices' profiles made, the laptop's merged into the phone's when ada signed in on it.
  await expect.poll(() => column("History", 1)).toEqual(["Merged", "Created", "Created"]);
  const merged = await cells(rowsOf("History").nth(1));
  expect(merged[2]).toMatch(new RegExp(`^[0-9a-f-]{36} merged into ${profileId}$`));
  expect(merged[3]).toBe("m-id-laptop");
  // The merged profile's id is listed with the profile's.
  await page
    .getByRole("definition")
    .filter({ hasText: merged[2]!.slice(0, 36) })
    .waitFor();

  // A call's message id opens its message page, whose user links back to the profile.
  await page.getByRole("table", { name: "Timeline" }).getByRole("link", { name: "m-id-laptop" }).click();
  await page.getByRole("heading", { name: "Message m-id-laptop" }).waitFor();
  await page.getByRole("link", { name: "Profile", exact: true }).click();
  await page.getByRole("heading", { name: `Profile ${profileId}` }).waitFor();
  expect(console_.problems).toEqual([]);
});

test("search by a trait; an identifier a rule left out shows in the history with why", async ({ server }) => {
  await page.goto(`${server.url}/console/profiles`);
  const byTrait = page.getByRole("search", { name: "Search by trait" });
  await byTrait.getByLabel("Trait", { exact: true }).fill("plan");
  await byTrait.getByLabel("Trait value").fill("pro");
  await byTrait.getByRole("button", { name: "Search traits" }).click();
  await expect.poll(() => rowsOf("Profiles").count()).toBe(2);
  expect((await cells(rowsOf("Profiles").nth(1)))[1]).toContain("user_id:ada");

  await byTrait.getByLabel("Trait value").fill("free");
  await byTrait.getByRole("button", { name: "Search traits" }).click();
  await page.getByRole("table", { name: "Profiles" }).getByText("No profile matches.").waitFor();

  await page.goto(`${server.url}/console/profiles?prefix=bob`);
  await page.getByRole("table", { name: "Profiles" }).getByRole("link").click();
  await expect.poll(() => column("History", 1)).toEqual(["Identifier left out", "Created"]);
  const leftOut = await cells(rowsOf("History").nth(1));
  expect(leftOut[2]).toMatch(/^anonymous_id:laptop-1 was not linked: \S/);
  expect(leftOut[3]).toBe("m-id-bob");
  expect(await column("Identifiers", 1)).toEqual(["bob"]);
});

test("a delivery's and a held-back call's Profile links open the profile of its user; an identifier no profile holds yet says so", async ({
  server,
}) => {
  await page.goto(`${server.url}/console/deliveries/${deliveryId}`);
  await page.getByRole("heading", { name: `Delivery ${deliveryId}` }).waitFor();
  const link = page.getByRole("link", { name: "Profile", exact: true });
  expect(await link.getAttribute("href")).toBe("/console/profiles?identifier=user_id:ada");
  await link.click();
  await page.getByRole("heading", { name: /^Profile [0-9a-f-]{36}$/ }).waitFor();
  await expect.poll(() => column("Identifiers", 1)).toContain("ada");
  // The lookup's page was replaced by the profile's: Back returns to the delivery.
  await page.goBack();
  await page.getByRole("heading", { name: `Delivery ${deliveryId}` }).waitFor();

  // A call the filter held back links its user to the profile too.
  await page.goto(`${server.url}/console/destinations/${identifiesId}/filtered`);
  await page.getByRole("table", { name: "Calls without a delivery" }).getByRole("link", { name: "Profile of ada" }).first().click();
  await page.getByRole("heading", { name: /^Profile [0-9a-f-]{36}$/ }).waitFor();

  await page.goto(`${server.url}/console/profiles?identifier=user_id:nobody`);
  await page.getByRole("status").filter({ hasText: "No profile yet holds user_id:nobody" }).waitFor();
  expect(await page.getByRole("status").textContent()).toContain("identity resolution runs a moment behind ingest");
  await page.getByRole("button", { name: "Look again" }).click();
  await page.getByRole("status").filter({ hasText: "No profile yet" }).waitFor();
  expect(console_.problems).toEqual([]);
});
