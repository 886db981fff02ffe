import { afterAll, expect } from "vitest";
import type { Page } from "playwright-core";
import { openConsole, type ConsolePage } from "../helpers/console-page.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";
import { completionsOf } from "../helpers/server.js";

/**
 * Pages that follow deliveries on their own: Live (from the moment it
 * opens, filtered by destination and status) and the Deliveries list after
 * Retry all matching (the replay runs as a job on the server; its progress shows).
 */
let console_: ConsolePage;
let page: Page;
const destinations: Record<string, { id: string; writeKey: string }> = {};

const test = testWith({ receiver: { respond: (request) => (request.body.includes("refuse") ? { status: 400 } : { status: 200 }) } });
test.beforeAll(async ({ server, receiver }) => {
  // "refuse" in an event's name: a permanent failure.
  for (const name of ["alpha", "beta", "gamma"]) {
    const source = await server.createSource(`${name} source`);
    const destination = await server.createDestination({ name, sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
    destinations[name] = { id: destination.id, writeKey: source.writeKey };
  }
  console_ = await openConsole(server);
  page = console_.page;
});
afterAll(async () => {
  await console_?.browser.close();
});

/** A track call to one destination, once its delivery is recorded; the rows show its messageId. */
async function deliver(server: TestServer, name: string, event: string): Promise<string> {
  const done = completionsOf(server, destinations[name]!.id, 1);
  const { messageId } = await server.tracking(destinations[name]!.writeKey).track({ track: { userId: "u", event } });
  await done;
  return messageId;
}

const live = () => page.getByRole("table", { name: "Finished deliveries" }).getByRole("row");
const liveFilters = () => page.getByRole("search", { name: "Filter live deliveries" });
let after = "";
const following = () => page.getByRole("status").filter({ hasText: "Following deliveries that finished since" });

test("Live starts from now: what finished before the page opened is not shown", async ({ server }) => {
  const before = await deliver(server, "alpha", "before-opening");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Live", exact: true }).click();
  await following().waitFor();
  after = await deliver(server, "alpha", "after-opening");
  await live().filter({ hasText: after }).waitFor();
  expect(await live().filter({ hasText: before }).count()).toBe(0);
});

test("Live follows one destination, then one status", async ({ server }) => {
  await liveFilters().getByLabel("Destination").selectOption({ label: "beta" });
  await following().waitFor();
  expect(new URL(page.url()).searchParams.get("destination")).toBe(destinations.beta!.id);
  // A new filter starts again from now: the rows of before are gone.
  expect(await live().filter({ hasText: after }).count()).toBe(0);
  // Finished in this order, so if alpha's were shown it would be by the time beta's is.
  const alpha = await deliver(server, "alpha", "alpha-while-filtered");
  const beta = await deliver(server, "beta", "beta-while-filtered");
  await live().filter({ hasText: beta }).waitFor();
  expect(await live().filter({ hasText: alpha }).count()).toBe(0);
  const destinationLink = live().filter({ hasText: beta }).getByRole("link", { name: "beta" });
  expect(await destinationLink.getAttribute("href")).toBe(`/console/destinations/${destinations.beta!.id}`);

  await liveFilters().getByLabel("Status").selectOption("failed");
  await following().waitFor();
  const delivered = await deliver(server, "beta", "delivered-while-failed-only");
  const refused = await deliver(server, "beta", "refuse-while-failed-only");
  await live().filter({ hasText: refused }).waitFor();
  expect(await live().filter({ hasText: delivered }).count()).toBe(0);
});

test("after Retry all matching the list refreshes itself until the replay shows", async ({ server, receiver }) => {
  const gamma = destinations.gamma!;
  await deliver(server, "gamma", "refuse-1");
  await deliver(server, "gamma", "refuse-2");
  receiver.respond = () => ({ status: 200 });
  await page.goto(`${server.url}/console/deliveries?destination=${gamma.id}`);
  const rows = page.getByRole("table", { name: "Deliveries" }).getByRole("row");
  await rows.filter({ hasText: "failed" }).nth(1).waitFor();

  // Hold the replay back until the page has reloaded after queuing it: the
  // reload then shows nothing that moved, as when the server is slower than
  // the page.
  const lock = await server.pool.connect();
  let listsAfterQueued = 0;
  let queued = false;
  page.on("response", (response) => {
    if (response.url().endsWith("/RetryDeliveries")) queued = true;
    else if (queued && response.url().endsWith("/ListDeliveries")) listsAfterQueued++;
  });
  try {
    await lock.query("BEGIN");
    // The failed deliveries are in the history: lock them there (the replay deletes them from it).
    await lock.query("SELECT 1 FROM delivery_history WHERE destination_id = $1 FOR UPDATE", [gamma.id]);
    await page.getByRole("button", { name: "Retry all matching" }).click();
    // The job's progress while it is held back.
    await page.getByRole("status").filter({ hasText: "Retried 0 of 2 matching deliveries." }).waitFor();
    await expect.poll(() => listsAfterQueued).toBeGreaterThan(0);
    expect(await rows.filter({ hasText: "failed" }).count()).toBe(2);
  } finally {
    await lock.query("COMMIT");
    lock.release();
  }
  await rows.filter({ hasText: "delivered" }).nth(1).waitFor({ timeout: 20_000 });
  await page.getByRole("status").filter({ hasText: "Retried 2 of 2 matching deliveries. Done." }).waitFor();
  expect(await page.getByRole("progressbar", { name: "Retry progress" }).getAttribute("value")).toBe("2");
});

test("ran without page errors or Content-Security-Policy violations", () => {
  expect(console_.problems).toEqual([]);
});
