import { afterAll, beforeAll, expect, test } from "vitest";
import { ManualClock } from "../../src/clock.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

const day = 24 * 3_600_000;
let clock: ManualClock;
let server: TestServer;
let receiver: Receiver;

beforeAll(async () => {
  clock = new ManualClock(new Date("2026-11-01T00:00:00Z"));
  server = await startTestServer({ clock });
  receiver = await startReceiver({ respond: (request) => ({ status: JSON.parse(request.body).event === "stuck" ? 500 : 200 }) });
});
afterAll(async () => {
  await server?.stop();
  await receiver?.close();
});

async function count(table: string): Promise<number> {
  return (await server.pool.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n;
}

test("delivered data is purged after the retention period; unfinished work is kept", async () => {
  const source = await server.createSource();
  await server.createDestination({ name: "hook", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  const client = server.tracking(source.writeKey);
  const delivered = server.waitForDeliveries(3, ["delivered"]);
  for (const event of ["a", "b", "c"]) await client.track({ track: { userId: "u", event } });
  await delivered;
  const stuck = server.waitForDeliveries(1, ["retrying"]);
  await client.track({ track: { userId: "u", event: "stuck" } });
  await stuck;
  expect(await count("messages")).toBe(4);
  expect(await count("delivery_attempts")).toBe(4);

  clock.advance(6 * day);
  expect((await server.waypost.maintenance!.runOnce()).purged).toBe(0);
  expect(await count("messages")).toBe(4);

  // The stuck delivery stays unfinished (as a long-paused one would) to show unfinished work survives.
  clock.advance(2 * day);
  await server.pool.query("UPDATE deliveries SET first_attempt_at = $1 WHERE status = 'retrying'", [clock.now()]);
  const { purged } = await server.waypost.maintenance!.runOnce();
  expect(purged).toBe(3);
  expect(await count("messages")).toBe(1);
  expect(await count("deliveries")).toBe(1);
  expect(await count("delivery_attempts")).toBe(1);
});
