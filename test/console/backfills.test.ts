import { afterAll, expect } from "vitest";
import type { Page } from "playwright-core";
import { eventually } from "../helpers/process.js";
import { openConsole, type ConsolePage } from "../helpers/console-page.js";
import { testWith } from "../helpers/fixtures.js";

/**
 * The destination page's Backfills: start one, see it running with its
 * progress, cancel it, and see one done with its counts, in Debian's
 * Chromium against a real Waypost.
 */
let console_: ConsolePage;
let page: Page;
let destinationId = "";

const test = testWith();
test.beforeAll(async ({ server }) => {
  const source = await server.createSource("shop");
  const tracking = server.tracking(source.writeKey);
  for (const total of [5, 500, 600]) await tracking.track({ track: { userId: "u", event: "Order Completed", properties: { total } } });
  const destination = await server.createDestination({
    name: "orders",
    sourceIds: [source.id],
    webhooks: [{ url: "http://127.0.0.1:9/" }],
    enabled: false,
    filter: { "properties.total": { $gt: 100 } },
  });
  destinationId = destination.id;
  console_ = await openConsole(server);
  page = console_.page;
});
afterAll(async () => {
  await console_?.browser.close();
});

const rows = () => page.getByRole("table", { name: "Backfills" }).getByRole("row");

test("a running backfill shows its progress and can be cancelled; a finished one shows its counts", async ({ server }) => {
  await page.goto(`${server.url}/console/destinations/${destinationId}`);
  await rows().filter({ hasText: "No backfills yet." }).waitFor();

  // Held before its first page (by the lock every page of this destination takes): it stays running.
  const lock = await server.pool.connect();
  try {
    await lock.query("SELECT pg_advisory_lock(hashtext('waypost-backfill:' || $1::text))", [destinationId]);
    await page.getByLabel("Days back").fill("1");
    await page.getByRole("button", { name: "Backfill", exact: true }).click();
    const running = rows().filter({ hasText: "Running" });
    await running.waitFor();
    expect(await running.getByRole("progressbar").getAttribute("value")).toBe("0");
    expect(await running.getByRole("progressbar").getAttribute("max")).toBe("3");
    await running.getByRole("button", { name: "Cancel" }).click();
    await rows().filter({ hasText: "Cancelled: cancelled on request" }).waitFor();
  } finally {
    await lock.query("SELECT pg_advisory_unlock(hashtext('waypost-backfill:' || $1::text))", [destinationId]);
    lock.release();
  }

  await page.getByRole("button", { name: "Backfill", exact: true }).click();
  // The page reads it again while it runs, until it is done: 3 candidates, 2 created, 1 filtered.
  const done = rows().filter({ hasText: "Done" });
  await done.waitFor();
  const cells = await done.getByRole("cell").allTextContents();
  expect(cells.slice(4, 7)).toEqual(["3", "2", "1"]);
  expect(await done.getByRole("progressbar").getAttribute("value")).toBe("3");
  await eventually(
    async () =>
      (await server.pool.query("SELECT count(*) FROM delivery_queue WHERE destination_id = $1", [destinationId])).rows[0].count === "2",
  );
});

test("ran without page errors or Content-Security-Policy violations", () => {
  expect(console_.problems).toEqual([]);
});
