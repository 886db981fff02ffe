import { performance } from "node:perf_hooks";
import { afterEach, expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";
import { attemptsBy, createWorkerPool, maxInWindow, startTimedReceiver, type TimedReceiver } from "./flow-support.js";

// An API-only server takes calls and settings; two separate worker processes
// deliver, sharing only the database. The limit is checked against real
// arrival times at a real receiver: there is no clock to fake across
// processes, so these tests run in real time (the first about 12 s).
const receivers: TimedReceiver[] = [];

const test = testWith({ server: { config: { role: "api" } } });
let workers: ReturnType<typeof createWorkerPool>;
test.beforeAll(({ server }) => {
  workers = createWorkerPool(() => server.database.url);
});
afterEach(async () => {
  await workers.stopAll();
  await Promise.all(receivers.splice(0).map((r) => r.receiver.close()));
});

async function limitedDestination(api: TestServer, rate: number, calls: number) {
  const timed = await startTimedReceiver();
  receivers.push(timed);
  const source = await api.createSource();
  const destination = await api.createDestination({
    name: "limited",
    sourceIds: [source.id],
    webhooks: [{ url: timed.receiver.url }],
    maxRequestsPerSecond: rate,
  });
  const client = api.tracking(source.writeKey);
  for (let sent = 0; sent < calls; sent += 100) {
    const size = Math.min(100, calls - sent);
    await client.batch({
      batch: Array.from({ length: size }, (_, i) => ({
        type: { case: "track" as const, value: { userId: `u${(sent + i) % 37}`, event: "E", properties: { n: sent + i } } },
      })),
    });
  }
  return { ...timed, destination };
}

test("two worker processes together stay within 10 % of the limit over every 10 s window", { timeout: 60_000 }, async ({ server: api }) => {
  const rate = 40;
  const total = 480;
  const { receiver, arrivals } = await limitedDestination(api, rate, total);
  const a = await workers.start();
  const b = await workers.start();
  await receiver.waitForRequests(total);
  const times = arrivals.map((x) => x.at);
  const span = times[times.length - 1]! - times[0]!;
  expect(span).toBeGreaterThan(10_000);
  const busiest = maxInWindow(times, 10_000);
  // At most 10 % over the limit in any 10 s window...
  expect(busiest).toBeLessThanOrEqual(rate * 10 * 1.1);
  // ...and the limit is a limit, not a stall: the backlog goes at about the rate.
  expect(busiest).toBeGreaterThanOrEqual(rate * 10 * 0.8);
  // Both processes sent: the bucket is shared, not per process.
  const [byA, byB] = [await attemptsBy(a), await attemptsBy(b)];
  expect(byA + byB).toBe(total);
  expect(byA).toBeGreaterThan(0);
  expect(byB).toBeGreaterThan(0);
});

test("a limit raised or removed over the API applies from the next claim", { timeout: 60_000 }, async ({ server: api }) => {
  const raised = await limitedDestination(api, 4, 300);
  const removed = await limitedDestination(api, 4, 300);
  // Without identity resolution: its pages are other work in the workers' event loops, which can
  // hold sends back and let them out together, and this test reads the limit off arrival times.
  await workers.start({ WAYPOST_POLL_INTERVAL_MS: "1000", WAYPOST_IDENTITY: "off" });
  await workers.start({ WAYPOST_POLL_INTERVAL_MS: "1000", WAYPOST_IDENTITY: "off" });
  await Promise.all([raised.receiver.waitForRequests(4), removed.receiver.waitForRequests(4)]);
  // The old limit holds until the update: by the arrival times (a busy
  // machine may check this late, so the count so far proves nothing), no 2 s
  // window has more than two seconds' tokens and a full bucket.
  const oldLimitHeld = (arrivals: TimedReceiver["arrivals"]) =>
    maxInWindow(
      arrivals.map((x) => x.at),
      2_000,
    ) <=
    4 * 2 + 4 + 1;

  await api.destinations.updateDestination({
    destination: { id: raised.destination.id, maxRequestsPerSecond: 1_000 },
    updateMask: { paths: ["max_requests_per_second"] },
  });
  const raisedAt = performance.now();
  const { destination: cleared } = await api.destinations.updateDestination({
    destination: { id: removed.destination.id, maxRequestsPerSecond: 0 },
    updateMask: { paths: ["max_requests_per_second"] },
  });
  const removedAt = performance.now();
  expect(cleared?.maxRequestsPerSecond).toBe(0);

  const countBefore = (arrivals: TimedReceiver["arrivals"], at: number) => arrivals.filter((x) => x.at <= at).length;
  const raisedBase = countBefore(raised.arrivals, raisedAt);
  const removedBase = countBefore(removed.arrivals, removedAt);
  expect(oldLimitHeld(raised.arrivals.slice(0, raisedBase))).toBe(true);
  expect(oldLimitHeld(removed.arrivals.slice(0, removedBase))).toBe(true);
  await Promise.all([raised.receiver.waitForRequests(raisedBase + 100), removed.receiver.waitForRequests(removedBase + 100)]);
  // About one claim interval (the poll interval, 1 s; the update also wakes
  // the workers at once). The bound only has to tell the new limit from the
  // old one, which needs 25 s for 100: half of that leaves a busy machine room.
  expect(raised.arrivals[raisedBase + 99]!.at - raisedAt).toBeLessThan(12_500);
  expect(removed.arrivals[removedBase + 99]!.at - removedAt).toBeLessThan(12_500);
});

test("a destination waiting for tokens holds no worker slots", { timeout: 60_000 }, async ({ server: api }) => {
  // One worker with 4 slots in all; a backlog of 200 limited to 2/s beside 100 unlimited.
  const limited = await limitedDestination(api, 2, 200);
  const free = await startTimedReceiver();
  receivers.push(free);
  const source = await api.createSource();
  const unlimited = await api.createDestination({ name: "free", sourceIds: [source.id], webhooks: [{ url: free.receiver.url }] });
  const client = api.tracking(source.writeKey);
  await client.batch({
    batch: Array.from({ length: 100 }, (_, i) => ({ type: { case: "track" as const, value: { userId: `f${i}`, event: "F" } } })),
  });
  const started = performance.now();
  await workers.start({ WAYPOST_DELIVERY_CONCURRENCY: "4", WAYPOST_DESTINATION_CONCURRENCY: "4" });
  await free.receiver.waitForRequests(100);
  const elapsedS = (performance.now() - started) / 1_000;
  // The limited backlog took only what its tokens allowed (it starts empty)...
  expect(limited.arrivals.length).toBeLessThanOrEqual(Math.ceil(elapsedS * 2) + 1);
  // ...and holds no claimed deliveries waiting for tokens: at most what was just claimed is leased.
  const leased = await api.pool.query("SELECT count(*)::int AS n FROM deliveries WHERE destination_id = $1 AND leased_until > now()", [
    limited.destination.id,
  ]);
  expect(leased.rows[0].n).toBeLessThanOrEqual(2);
  expect(unlimited.maxRequestsPerSecond).toBe(0);
});

test("the limit is validated and returned", async ({ server: api }) => {
  const source = await api.createSource();
  const created = await api.createDestination({
    name: "v",
    sourceIds: [source.id],
    webhooks: [{ url: "http://127.0.0.1:9/hook" }],
    maxRequestsPerSecond: 250,
  });
  expect(created.maxRequestsPerSecond).toBe(250);
  expect((await api.destinations.getDestination({ id: created.id })).destination?.maxRequestsPerSecond).toBe(250);
  const listed = await api.destinations.listDestinations({ sourceId: source.id });
  expect(listed.destinations[0]?.maxRequestsPerSecond).toBe(250);
  await expect(api.destinations.updateDestination({ destination: { id: created.id, maxRequestsPerSecond: 100_001 } })).rejects.toThrow(
    /destination\.maxRequestsPerSecond: must be a whole number from 0 \(no limit\) to 100000/,
  );
  // An update without the field keeps it.
  const renamed = await api.destinations.updateDestination({ destination: { id: created.id, name: "w" } });
  expect(renamed.destination?.maxRequestsPerSecond).toBe(250);
  const plain = await api.createDestination({ name: "p", sourceIds: [source.id], webhooks: [{ url: "http://127.0.0.1:9/hook" }] });
  expect(plain.maxRequestsPerSecond).toBe(0);
});
