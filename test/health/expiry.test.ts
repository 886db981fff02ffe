import { expect } from "vitest";
import { DestinationHealth } from "../../gen/waypost/v1/destination_pb.js";
import { ManualClock } from "../../src/clock.js";
import { testWith } from "../helpers/fixtures.js";
import { verifyStandardWebhook } from "../helpers/standard-webhooks.js";
import { claimRound, healthConfig, statuses, testCircuit, trackAndRecord, destinationHealth, operatorEventsAt } from "./support.js";

// Expiry while a circuit is open. The cooldown is longer than the test's
// hours, so no probe can be due when the clock jumps: what the endpoint
// receives and what expires follow from the steps alone.
const second = 1_000;
const hour = 3_600_000;
const operatorSecret = `whsec_${Buffer.alloc(32, 5).toString("base64")}`;
const clock = new ManualClock(new Date("2026-11-22T10:00:00Z"));
// The operator's events go to the file's receiver.
const test = testWith({
  server: ({ receiver: operator }) => {
    const config = healthConfig({ operatorWebhook: { url: operator.url, secret: operatorSecret } });
    config.delivery = { ...config.delivery, circuit: { ...testCircuit, cooldownMs: 24 * hour, maxCooldownMs: 24 * hour } };
    return { clock, config };
  },
});
test.afterEach(async ({ server }) => {
  await server.waypost.delivery!.settle();
});

test("deadlines still expire the deliveries of an open circuit; the operator hears at most once a minute per destination", async ({
  server,
  receiver: operator,
  receivers,
}) => {
  const down = await receivers.start({ respond: () => ({ status: 503 }) });
  const source = await server.createSource();
  const destination = await server.createDestination({ name: "gone", sourceIds: [source.id], webhooks: [{ url: down.url }] });
  const start = clock.now().getTime();
  const at = (s: number) => clock.set(new Date(start + s * second));
  for (const s of [0, 30, 60]) {
    at(s);
    await trackAndRecord(server, source.writeKey, `open-${s}`);
  }
  expect((await destinationHealth(server, destination.id)).health).toBe(DestinationHealth.CIRCUIT_OPEN);
  // Created while open, never attempted: their window runs from creation.
  const client = server.tracking(source.writeKey);
  for (let i = 0; i < 5; i++) await client.track({ track: { userId: "u", event: `held-${i}` } });
  at(80);
  for (let i = 0; i < 2; i++) await client.track({ track: { userId: "u", event: `later-${i}` } });
  await claimRound(server);
  const loop = server.waypost.delivery!;
  const maintenance = server.waypost.maintenance!;
  const expiredEvents = () =>
    operatorEventsAt(operator).filter(
      (e) => e.body.type === "destination.deliveries_expired" && e.body.data.destinationId === destination.id,
    );
  const report = async () => {
    await loop.health.runOnce();
    await loop.settle();
    return expiredEvents().map((e) => e.body.data.count);
  };

  at(4 * 3600 + 59);
  await maintenance.runOnce();
  expect(await statuses(server, destination.id)).toEqual({ expired: 2, retrying: 1, pending: 7 });
  at(4 * 3600 + 61);
  await maintenance.runOnce();
  expect(await statuses(server, destination.id)).toEqual({ expired: 8, pending: 2 });
  expect(await report()).toEqual([8]);
  const [first] = expiredEvents();
  expect(verifyStandardWebhook(operatorSecret, first!.request, clock.now())).toMatchObject({
    type: "destination.deliveries_expired",
    data: { name: "gone", count: 8 },
  });

  // Two more expire 20 s later: counted, not announced within the minute.
  at(4 * 3600 + 81);
  await maintenance.runOnce();
  expect(await statuses(server, destination.id)).toEqual({ expired: 10 });
  expect(await report()).toEqual([8]);
  at(4 * 3600 + 121);
  expect(await report()).toEqual([8, 2]);
  expect(await report()).toEqual([8, 2]);
  // The circuit kept the endpoint free of requests all along.
  expect(down.requests).toHaveLength(3);
});
