import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { afterAll, expect } from "vitest";
import { DeliveryOrder, DeliveryStatus, type Delivery } from "../../gen/waypost/v1/delivery_pb.js";
import { testWith } from "../helpers/fixtures.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { completionsOf, ManualClock, type TestServer } from "../helpers/server.js";

const hour = 3_600_000;
const start = new Date("2026-11-23T09:00:00Z");
const clock = new ManualClock(start);
let failing = true;
const test = testWith({ server: { clock }, receiver: { respond: () => ({ status: failing ? 422 : 200 }) } });
let slow: Receiver;
let slowId: string;
let flakyId: string;
let writeKey: string;

test.beforeAll(async ({ server, receiver: flaky }) => {
  // The manual clock stands still while the request runs: only the measured latency moves the end.
  slow = await startReceiver({ respond: () => ({ status: 200, after: new Promise((resolve) => setTimeout(resolve, 300)) }) });
  const slowSource = await server.createSource("slow source");
  const flakySource = await server.createSource("flaky source");
  writeKey = flakySource.writeKey;
  slowId = (await server.createDestination({ name: "slow", sourceIds: [slowSource.id], webhooks: [{ url: slow.url }] })).id;
  flakyId = (await server.createDestination({ name: "flaky", sourceIds: [flakySource.id], webhooks: [{ url: flaky.url }] })).id;
  const done = completionsOf(server, slowId, 1);
  await server.tracking(slowSource.writeKey).track({ track: { userId: "u", event: "slow" } });
  await done;
});
afterAll(async () => {
  await slow?.close();
});

const ms = (ts: Timestamp | undefined) => timestampDate(ts!).getTime();

async function only(server: TestServer, destinationId: string): Promise<Delivery> {
  const { deliveries } = await server.deliveries.listDeliveries({ destinationId, pageSize: 1 });
  return (await server.deliveries.getDelivery({ id: deliveries[0]!.id })).delivery!;
}

test("Finished is when the last attempt ended, not when it started", async ({ server }) => {
  const delivery = await only(server, slowId);
  const attempt = delivery.attempts[0]!;
  expect(attempt.latencyMs).toBeGreaterThanOrEqual(300);
  expect(ms(delivery.firstAttemptTime)).toBe(start.getTime());
  expect(ms(delivery.finalizeTime)).toBe(ms(attempt.attemptTime) + attempt.latencyMs);
  // The finish feed and the list carry the same time.
  const feed = await server.deliveries.listDeliveries({ destinationId: slowId, order: DeliveryOrder.FINISH_TIME_DESC });
  expect(ms(feed.deliveries[0]!.finalizeTime)).toBe(ms(delivery.finalizeTime));
});

test("a replay, single or bulk, keeps the first attempt time and moves Finished to the replay's attempt", async ({ server }) => {
  clock.set(new Date(start.getTime() + hour));
  const failed = completionsOf(server, flakyId, 1);
  await server.tracking(writeKey).track({ track: { userId: "u", event: "flaky" } });
  await failed;
  const first = await only(server, flakyId);
  expect(first.status).toBe(DeliveryStatus.FAILED);
  const firstAttempt = ms(first.firstAttemptTime);
  expect(firstAttempt).toBe(start.getTime() + hour);

  // Still failing an hour later: replayed, failed again; the first attempt stays.
  clock.advance(hour);
  let done = completionsOf(server, flakyId, 1);
  await server.deliveries.retryDelivery({ id: first.id });
  await done;
  const again = await only(server, flakyId);
  expect(again.status).toBe(DeliveryStatus.FAILED);
  expect(again.attemptCount).toBe(2);
  expect(ms(again.firstAttemptTime)).toBe(firstAttempt);
  expect(ms(again.finalizeTime)).toBeGreaterThanOrEqual(start.getTime() + 2 * hour);

  // A bulk replay an hour later delivers it; the first attempt is still the first.
  failing = false;
  clock.advance(hour);
  done = completionsOf(server, flakyId, 1);
  const { job } = await server.deliveries.retryDeliveries({ destinationId: flakyId });
  expect(job!.matched).toBe(1n);
  await done;
  const delivered = await only(server, flakyId);
  expect(delivered.status).toBe(DeliveryStatus.DELIVERED);
  expect(delivered.attemptCount).toBe(3);
  expect(ms(delivered.firstAttemptTime)).toBe(firstAttempt);
  const last = delivered.attempts.at(-1)!;
  expect(ms(last.attemptTime)).toBe(start.getTime() + 3 * hour);
  expect(ms(delivered.finalizeTime)).toBe(ms(last.attemptTime) + last.latencyMs);
});
