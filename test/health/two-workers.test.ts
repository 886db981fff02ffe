import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { DestinationHealth } from "../../gen/waypost/v1/destination_pb.js";
import { ManualClock } from "../../src/clock.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { circuitGauge, claimRound, healthConfig, statuses } from "./support.js";

// Two Waypost processes' worth of delivery loops, each with its own pool and
// LISTEN connection, on one database and one manual clock: the breaker's
// state must be the same for both. (In one test process, so that both
// follow the manual clock; separate OS processes share the same code path.)
const second = 1_000;
const operatorSecret = `whsec_${Buffer.alloc(32, 9).toString("base64")}`;
let clock: ManualClock;
let a: TestServer;
let b: TestServer;
let operator: Receiver;
const receivers: Receiver[] = [];

beforeAll(async () => {
  clock = new ManualClock(new Date("2026-11-22T10:00:00Z"));
  operator = await startReceiver();
  const config = healthConfig({ operatorWebhook: { url: operator.url, secret: operatorSecret } });
  a = await startTestServer({ clock, config });
  b = await startTestServer({ clock, config, database: a.database });
});
afterAll(async () => {
  await b?.stop();
  await a?.stop();
  await operator?.close();
});
afterEach(async () => {
  await Promise.all([a.waypost.delivery!.settle(), b.waypost.delivery!.settle()]);
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

async function bothClaim() {
  await Promise.all([claimRound(a), claimRound(b)]);
}

test("two workers see one circuit: both hold back, exactly one probes, one announces", async () => {
  let down = true;
  const receiver = await startReceiver({ respond: () => ({ status: down ? 503 : 200 }) });
  receivers.push(receiver);
  const source = await a.createSource();
  const destination = await a.createDestination({ name: "shared", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  const client = a.tracking(source.writeKey);
  const start = clock.now().getTime();
  const at = (s: number) => clock.set(new Date(start + s * second));

  // Failures recorded by whichever worker claimed them add up to one run.
  for (const s of [0, 30, 60]) {
    at(s);
    await client.track({ track: { userId: "u", event: `e-${s}` } });
    await bothClaim();
  }
  expect(receiver.requests).toHaveLength(3);
  for (const server of [a, b]) {
    expect((await server.destinations.getDestination({ id: destination.id })).destination?.health).toBe(DestinationHealth.CIRCUIT_OPEN);
  }

  // Held back by both.
  for (let i = 0; i < 8; i++) await client.track({ track: { userId: "u", event: `held-${i}` } });
  await bothClaim();
  at(89);
  await bothClaim();
  expect(receiver.requests).toHaveLength(3);

  // The probe is due for both at once: one of them gets it.
  at(90);
  await bothClaim();
  expect(receiver.requests).toHaveLength(4);
  await bothClaim();
  expect(receiver.requests).toHaveLength(4);

  // Both processes' gauges agree after their refresh, whoever made the transition.
  await Promise.all([a.waypost.delivery!.health.runOnce(), b.waypost.delivery!.health.runOnce()]);
  expect(await circuitGauge(a, destination.id)).toBe(1);
  expect(await circuitGauge(b, destination.id)).toBe(1);

  // Recovery: the next probe (60 s later) closes it; the backlog drains.
  down = false;
  at(150);
  await bothClaim();
  await Promise.all([claimRound(a), claimRound(b)]);
  expect(await statuses(a, destination.id)).toMatchObject({ delivered: 7 });
  await Promise.all([a.waypost.delivery!.health.runOnce(), b.waypost.delivery!.health.runOnce()]);
  expect(await circuitGauge(a, destination.id)).toBe(0);
  expect(await circuitGauge(b, destination.id)).toBe(0);

  await Promise.all([a.waypost.delivery!.settle(), b.waypost.delivery!.settle()]);
  const types = operator.requests.map((r) => JSON.parse(r.body).type);
  expect(types).toEqual(["destination.circuit_opened", "destination.circuit_closed"]);
});
