import { timestampDate } from "@bufbuild/protobuf/wkt";
import { expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import { startReceiver, type ResponsePlan } from "../helpers/receiver.js";
import { completionsOf, ManualClock, type TestServer } from "../helpers/server.js";

const minute = 60_000;
const hour = 60 * minute;
const start = new Date("2026-11-22T10:00:10Z");
const clock = new ManualClock(start);
let respond: (index: number) => ResponsePlan = () => ({ status: 200 });
const test = testWith({ server: { clock }, receiver: { respond: (_request, index) => respond(index) } });
let destinationId: string;
let writeKey: string;

test.beforeAll(async ({ server, receiver }) => {
  const source = await server.createSource();
  writeKey = source.writeKey;
  destinationId = (await server.createDestination({ name: "stats", sourceIds: [source.id], webhooks: [{ url: receiver.url }] })).id;
});

async function send(server: TestServer, count: number, statuses?: string[]) {
  const done = server.waitForDeliveries(count, statuses);
  for (let i = 0; i < count; i++) await server.tracking(writeKey).track({ track: { userId: "u", event: "e" } });
  return done;
}

const at = (offsetMs: number) => new Date(Date.UTC(2026, 10, 22, 10, 0) + offsetMs).toISOString();

test("a per-minute series of finals, attempts and latency, and the hour and day figures", async ({ server }) => {
  // 10:00: three delivered, one of them slow.
  respond = (index) => (index === 1 ? { status: 200, after: new Promise((resolve) => setTimeout(resolve, 400)) } : { status: 200 });
  await send(server, 3);
  // 10:05: two failed.
  clock.advance(5 * minute);
  respond = () => ({ status: 422 });
  await send(server, 2);
  // 10:10: one retryable attempt; it expires at its next attempt, past the retry window, at 14:11.
  clock.advance(5 * minute);
  respond = () => ({ status: 503 });
  await send(server, 1, ["retrying"]);
  clock.advance(4 * hour + minute);
  const expired = server.waitForDeliveries(1, ["expired"]);
  server.waypost.delivery!.poke();
  await expired;
  clock.advance(19 * minute);

  const stats = await server.deliveries.getDestinationStats({ destinationId });
  const series = stats.series.map((m) => ({
    start: timestampDate(m.startTime!).toISOString(),
    delivered: Number(m.delivered),
    failed: Number(m.failed),
    expired: Number(m.expired),
    attempts: Number(m.attempts),
    successfulAttempts: Number(m.successfulAttempts),
    failedAttempts: Number(m.failedAttempts),
  }));
  expect(series).toEqual([
    { start: at(0), delivered: 3, failed: 0, expired: 0, attempts: 3, successfulAttempts: 3, failedAttempts: 0 },
    { start: at(5 * minute), delivered: 0, failed: 2, expired: 0, attempts: 2, successfulAttempts: 0, failedAttempts: 2 },
    { start: at(10 * minute), delivered: 0, failed: 0, expired: 0, attempts: 1, successfulAttempts: 0, failedAttempts: 1 },
    { start: at(4 * hour + 11 * minute), delivered: 0, failed: 0, expired: 1, attempts: 1, successfulAttempts: 0, failedAttempts: 1 },
  ]);
  const first = stats.series[0]!;
  expect(first.p99LatencyMs).toBeGreaterThanOrEqual(400);
  expect(first.p50LatencyMs).toBeLessThan(400);
  // It is 14:30: the last hour (13:31 to 14:30) holds only the expiry; the day everything.
  expect([stats.deliveredLastHour, stats.failedLastHour, stats.expiredLastHour]).toEqual([0n, 0n, 1n]);
  expect([stats.deliveredLast24h, stats.failedLast24h, stats.expiredLast24h]).toEqual([3n, 2n, 1n]);
  expect(stats.successRateLastHour).toBe(0);
  expect(stats.successRateLast24h).toBe(0.5);
  expect(stats.p99LatencyMsLast24h).toBeGreaterThanOrEqual(400);
  expect(stats.p50LatencyMsLast24h).toBeLessThan(400);
  expect(stats.backlog).toBe(0n);
  expect([stats.failedAttemptsLastHour, stats.failedAttemptsLast24h]).toEqual([1n, 4n]);
  // 6 hours back from 14:30 is 08:31: everything, as in the day.
  expect(
    stats.windows.map((w) => [
      w.minutes,
      w.delivered,
      w.failed,
      w.expired,
      w.attempts,
      w.successfulAttempts,
      w.failedAttempts,
      w.successRate,
    ]),
  ).toEqual([
    [60, 0n, 0n, 1n, 1n, 0n, 1n, 0],
    [360, 3n, 2n, 1n, 7n, 3n, 4n, 0.5],
    [1440, 3n, 2n, 1n, 7n, 3n, 4n, 0.5],
  ]);
  expect(stats.windows[1]!.p99LatencyMs).toBeGreaterThanOrEqual(400);
});

test("the series covers 24 hours; backlog counts pending and retrying", async ({ server }) => {
  clock.advance(20 * hour);
  let stats = await server.deliveries.getDestinationStats({ destinationId });
  // It is 10:30 the next day: 10:00 to 10:10 are more than 24 hours ago.
  expect(stats.series.map((m) => timestampDate(m.startTime!).toISOString())).toEqual([at(4 * hour + 11 * minute)]);
  expect(stats.deliveredLast24h).toBe(0n);
  expect(stats.successRateLastHour).toBeUndefined();
  respond = () => ({ status: 503 });
  await send(server, 2, ["retrying"]);
  stats = await server.deliveries.getDestinationStats({ destinationId });
  expect(stats.backlog).toBe(2n);
  expect(stats.retrying).toBe(2n);
});

test("an endpoint that only fails shows its failed attempts before any delivery fails", async ({ server }) => {
  const dead = await startReceiver({ respond: () => ({ status: 500 }) });
  try {
    const source = await server.createSource("dead source");
    const deadId = (await server.createDestination({ name: "dead", sourceIds: [source.id], webhooks: [{ url: dead.url }] })).id;
    const attempted = completionsOf(server, deadId, 3);
    for (let i = 0; i < 3; i++) await server.tracking(source.writeKey).track({ track: { userId: "u", event: "e" } });
    await attempted;
    const stats = await server.deliveries.getDestinationStats({ destinationId: deadId });
    // Nothing has reached a final state: only the attempts say the endpoint is failing.
    expect([stats.deliveredLastHour, stats.failedLastHour, stats.expiredLastHour, stats.successRateLastHour]).toEqual([
      0n,
      0n,
      0n,
      undefined,
    ]);
    expect([stats.failedAttemptsLastHour, stats.failedAttemptsLast24h]).toEqual([3n, 3n]);
    expect(stats.windows.map((w) => [w.minutes, w.attempts, w.failedAttempts])).toEqual([
      [60, 3n, 3n],
      [360, 3n, 3n],
      [1440, 3n, 3n],
    ]);
    expect(stats.series.map((m) => [m.attempts, m.failedAttempts, m.failed])).toEqual([[3n, 3n, 0n]]);
  } finally {
    await dead.close();
  }
});
