import { expect } from "vitest";
import { DestinationHealth } from "../../gen/waypost/v1/destination_pb.js";
import { ManualClock } from "../../src/clock.js";
import { testWith } from "../helpers/fixtures.js";
import { verifyStandardWebhook } from "../helpers/standard-webhooks.js";
import { circuitGauge, claimRound, healthConfig, statuses, trackAndRecord, destinationHealth, operatorEventsAt } from "./support.js";

const second = 1_000;
const operatorSecret = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
const clock = new ManualClock(new Date("2026-11-22T10:00:00Z"));
// The operator's events go to the file's receiver.
const test = testWith({
  server: ({ receiver: operator }) => ({ clock, config: healthConfig({ operatorWebhook: { url: operator.url, secret: operatorSecret } }) }),
});
test.afterEach(async ({ server }) => {
  await server.waypost.delivery!.settle();
});

test("opens after N failures spanning T, sends nothing while open, probes on a doubling cooldown, closes on success and drains", async ({
  server,
  receiver: operator,
  receivers,
}) => {
  let down = true;
  const receiver = await receivers.start({ respond: () => ({ status: down ? 503 : 200 }) });
  const source = await server.createSource();
  const destination = await server.createDestination({ name: "flaky", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  const start = clock.now().getTime();
  const at = (s: number) => clock.set(new Date(start + s * second));

  await trackAndRecord(server, source.writeKey, "a");
  at(30);
  await trackAndRecord(server, source.writeKey, "b");
  at(59);
  await trackAndRecord(server, source.writeKey, "c");
  // Three failures, but spanning 59 s: still closed, failing.
  expect((await destinationHealth(server, destination.id)).health).toBe(DestinationHealth.FAILING);
  expect((await destinationHealth(server, destination.id)).consecutiveFailures).toBe(3);
  at(60);
  await trackAndRecord(server, source.writeKey, "d");
  const open = await destinationHealth(server, destination.id);
  expect(open.health).toBe(DestinationHealth.CIRCUIT_OPEN);
  expect(open.lastError).toBe("HTTP 503");
  expect(open.nextProbeTime?.seconds).toBe(BigInt((start + 90 * second) / 1000));
  expect(await circuitGauge(server, destination.id)).toBe(1);
  expect(receiver.requests).toHaveLength(4);

  // New calls wait; nothing is sent until the probe is due.
  const client = server.tracking(source.writeKey);
  for (let i = 1; i <= 6; i++) await client.track({ track: { userId: "u", event: `e${i}` } });
  await claimRound(server);
  at(89);
  await claimRound(server);
  expect(receiver.requests).toHaveLength(4);

  // Probes at 90 s, then 60 s and 120 s (the cap) after each failed one.
  const probeTimes = [90, 150, 270];
  for (const [i, t] of probeTimes.entries()) {
    at(t - 1);
    await claimRound(server);
    expect(receiver.requests).toHaveLength(4 + i);
    at(t);
    await claimRound(server);
    expect(receiver.requests).toHaveLength(5 + i);
    expect((await destinationHealth(server, destination.id)).health).toBe(DestinationHealth.CIRCUIT_OPEN);
  }
  expect((await destinationHealth(server, destination.id)).nextProbeTime?.seconds).toBe(BigInt((start + 390 * second) / 1000));

  // The endpoint is back: the next probe closes the circuit and the two
  // fresh deliveries still waiting go at once, without another poke.
  down = false;
  at(390);
  const drained = server.waitForDeliveries(3, ["delivered"]);
  await claimRound(server);
  await drained;
  expect(receiver.requests).toHaveLength(7 + 3);
  const closed = await destinationHealth(server, destination.id);
  expect(closed.health).toBe(DestinationHealth.HEALTHY);
  expect(closed.consecutiveFailures).toBe(0);
  expect(await circuitGauge(server, destination.id)).toBe(0);

  // The failed ones retry on their own schedule and get through.
  at(900);
  const retried = server.waitForDeliveries(7, ["delivered"]);
  await claimRound(server);
  await retried;
  expect(await statuses(server, destination.id)).toEqual({ delivered: 10 });
  expect(receiver.requests).toHaveLength(17);

  // The operator heard about both transitions, once each, signed.
  await server.waypost.delivery!.settle();
  const events = operatorEventsAt(operator).filter((e) => e.body.data.destinationId === destination.id);
  expect(events.map((e) => e.body.type)).toEqual(["destination.circuit_opened", "destination.circuit_closed"]);
  expect(events[0]!.body.data).toMatchObject({ name: "flaky", consecutiveFailures: 4, lastError: "HTTP 503", cooldownMs: 30_000 });
  expect(events[1]!.body.data).toMatchObject({ name: "flaky", openForMs: 330_000 });
  // Verified as on arrival: the clock does not move while an event is sent.
  for (const { request } of events) {
    const sentAt = new Date(Number(request.headers["webhook-timestamp"]) * 1000);
    expect(verifyStandardWebhook(operatorSecret, request, sentAt)).toEqual(JSON.parse(request.body));
  }
  expect(events.map((e) => Number(e.request.headers["webhook-timestamp"]))).toEqual([
    (start + 60 * second) / 1000,
    (start + 390 * second) / 1000,
  ]);
});

test("a healthy destination keeps delivering while another's circuit is open; the open one's endpoint sees only the probes", async ({
  server,
  receivers,
}) => {
  const down = await receivers.start({ respond: () => ({ status: 503 }) });
  const up = await receivers.start({ respond: () => ({ status: 200 }) });
  const source = await server.createSource();
  const dead = await server.createDestination({ name: "dead", sourceIds: [source.id], webhooks: [{ url: down.url }] });
  await server.createDestination({ name: "alive", sourceIds: [source.id], webhooks: [{ url: up.url }] });
  const start = clock.now().getTime();
  for (const s of [0, 30, 60]) {
    clock.set(new Date(start + s * second));
    await trackAndRecord(server, source.writeKey, `open-${s}`, 2);
  }
  expect((await destinationHealth(server, dead.id)).health).toBe(DestinationHealth.CIRCUIT_OPEN);
  expect(down.requests).toHaveLength(3);

  // An hour in 30 s steps, one call per step.
  const client = server.tracking(source.writeKey);
  let sent = 3;
  for (let s = 90; s <= 60 + 3600; s += 30) {
    clock.set(new Date(start + s * second));
    await client.track({ track: { userId: "u", event: `step-${s}` } });
    sent++;
    await claimRound(server);
    expect(up.requests).toHaveLength(sent);
  }
  // Probes: 90 s after the start, then after 60 s, then every 120 s (the cap).
  const expectedProbes: number[] = [];
  for (let t = 90, cooldown = 30; t <= 3660; cooldown = Math.min(cooldown * 2, 120), t += cooldown) expectedProbes.push(t);
  expect(down.requests.length - 3).toBe(expectedProbes.length);
  expect(expectedProbes.length).toBeLessThan(32);
  expect((await destinationHealth(server, dead.id)).health).toBe(DestinationHealth.CIRCUIT_OPEN);
});

test("Retry-After: 120 from one delivery holds back the destination's other due deliveries", async ({ server, receivers }) => {
  const receiver = await receivers.start({ respond: () => ({ status: 200 }) });
  receiver.respond = (_, index) => (index === 0 ? { status: 429, headers: { "retry-after": "120" } } : { status: 200 });
  const source = await server.createSource();
  const destination = await server.createDestination({ name: "busy", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  const start = clock.now().getTime();
  await trackAndRecord(server, source.writeKey, "first");
  const client = server.tracking(source.writeKey);
  await client.track({ track: { userId: "u", event: "second" } });
  await client.track({ track: { userId: "u", event: "third" } });
  await claimRound(server);
  expect(receiver.requests).toHaveLength(1);
  const busy = await destinationHealth(server, destination.id);
  expect(busy.health).toBe(DestinationHealth.FAILING);
  expect(busy.backoffUntilTime?.seconds).toBe(BigInt((start + 120 * second) / 1000));

  clock.set(new Date(start + 119 * second));
  await claimRound(server);
  expect(receiver.requests).toHaveLength(1);
  // The two others go now; the first waits for its own retry (10 min here).
  clock.set(new Date(start + 120 * second));
  const done = server.waitForDeliveries(2, ["delivered"]);
  await claimRound(server);
  await done;
  expect(receiver.requests).toHaveLength(3);
  expect((await destinationHealth(server, destination.id)).health).toBe(DestinationHealth.HEALTHY);
});

test("new webhooks get their probe at once, without waiting out the cooldown", async ({ server, receivers }) => {
  const down = await receivers.start({ respond: () => ({ status: 503 }) });
  const fixed = await receivers.start({ respond: () => ({ status: 200 }) });
  const source = await server.createSource();
  const destination = await server.createDestination({ name: "moved", sourceIds: [source.id], webhooks: [{ url: down.url }] });
  const start = clock.now().getTime();
  for (const s of [0, 30, 60]) {
    clock.set(new Date(start + s * second));
    await trackAndRecord(server, source.writeKey, `open-${s}`);
  }
  const client = server.tracking(source.writeKey);
  for (let i = 0; i < 3; i++) await client.track({ track: { userId: "u", event: `held-${i}` } });
  await claimRound(server);
  expect((await destinationHealth(server, destination.id)).health).toBe(DestinationHealth.CIRCUIT_OPEN);

  // 30 s before the probe would be due: the update wakes the loop, the probe
  // goes to the new URL, succeeds, and the others follow.
  const delivered = server.waitForDeliveries(3, ["delivered"]);
  await server.destinations.updateDestination({
    destination: { id: destination.id, webhooks: [{ url: fixed.url }] },
    updateMask: { paths: ["webhooks"] },
  });
  await delivered;
  expect(fixed.requests).toHaveLength(3);
  expect(down.requests).toHaveLength(3);
  expect((await destinationHealth(server, destination.id)).health).toBe(DestinationHealth.HEALTHY);
});
