import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "vitest";
import { AttemptOutcome, DeliveryStatus } from "../../gen/waypost/v1/delivery_pb.js";
import { JobState } from "../../gen/waypost/v1/job_pb.js";
import { testWith } from "../helpers/fixtures.js";
import { ManualClock } from "../helpers/server.js";

const day = 24 * 3_600_000;
const clock = new ManualClock(new Date("2026-11-01T12:00:00Z"));
let failing = true;
const test = testWith({
  server: { clock, config: { retentionMs: 7 * day } },
  receiver: { respond: () => ({ status: failing ? 422 : 200 }) },
});
let destinationId: string;
let writeKey: string;
const oldMessages: string[] = [];
const newMessages: string[] = [];

test.beforeAll(async ({ server, receiver }) => {
  // Purges run only when this test says so.
  await server.waypost.maintenance!.stop();
  const source = await server.createSource();
  writeKey = source.writeKey;
  destinationId = (await server.createDestination({ name: "flaky", sourceIds: [source.id], webhooks: [{ url: receiver.url }] })).id;
  const send = async (ids: string[], count: number) => {
    const done = server.waitForDeliveries(count);
    for (let i = 0; i < count; i++) ids.push((await server.tracking(writeKey).track({ track: { userId: `u${i}`, event: "e" } })).messageId);
    await done;
  };
  await send(oldMessages, 3);
  clock.advance(8 * day);
  await send(newMessages, 4);
  failing = false;
  await send([], 1);
  failing = true;
});

const error = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );

test("refuses what cannot be retried, and unknown destinations", async ({ server }) => {
  const delivered = await error(server.deliveries.retryDeliveries({ destinationId, statuses: [DeliveryStatus.DELIVERED] }));
  expect(delivered?.code).toBe(Code.InvalidArgument);
  expect(delivered?.rawMessage).toMatch(/statuses\[0\]: delivered deliveries cannot be retried/);
  expect((await error(server.deliveries.retryDeliveries({ destinationId: "" })))?.code).toBe(Code.InvalidArgument);
  const missing = await error(server.deliveries.retryDeliveries({ destinationId: "00000000-0000-4000-8000-000000000999" }));
  expect(missing?.code).toBe(Code.NotFound);
  const none = await server.deliveries.retryDeliveries({ destinationId, since: timestampFromDate(new Date(clock.now().getTime() + day)) });
  // Nothing matches: the job is done at once.
  expect(none.job).toMatchObject({ state: JobState.DONE, matched: 0n, retried: 0n, notReplayable: 0n });
  expect((await error(server.deliveries.getRetryJob({ id: "nope" })))?.code).toBe(Code.InvalidArgument);
  expect((await error(server.deliveries.getRetryJob({ id: "00000000-0000-4000-8000-000000000999" })))?.code).toBe(Code.NotFound);
});

test("replays every failed delivery in the background, counting those past retention as not replayable", async ({ server }) => {
  failing = false;
  const delivered = server.waitForDeliveries(4, ["delivered"]);
  const { job } = await server.deliveries.retryDeliveries({ destinationId });
  expect(job).toMatchObject({ destinationId, matched: 4n, notReplayable: 3n });
  const replayed = await delivered;
  await server.waypost.jobs!.idle();
  const done = await server.deliveries.getRetryJob({ id: job!.id });
  expect(done.job).toMatchObject({ id: job!.id, state: JobState.DONE, matched: 4n, retried: 4n, notReplayable: 3n });
  expect(done.job!.finishTime).toBeDefined();
  const byId = await Promise.all(replayed.map((c) => server.deliveries.getDelivery({ id: c.id })));
  expect(byId.map((r) => r.delivery!.messageId).sort()).toEqual([...newMessages].sort());
  for (const { delivery } of byId) {
    expect(delivery!.status).toBe(DeliveryStatus.DELIVERED);
    expect(delivery!.attempts.map((a) => a.outcome)).toEqual([AttemptOutcome.PERMANENT, AttemptOutcome.SUCCESS]);
    // A fresh window: the first attempt is the replay's.
    expect(delivery!.firstAttemptTime).toEqual(delivery!.attempts[1]!.attemptTime);
  }
  const stillFailed = await server.deliveries.listDeliveries({ destinationId, status: DeliveryStatus.FAILED });
  expect(stillFailed.deliveries.map((d) => d.messageId).sort()).toEqual([...oldMessages].sort());
  // Nothing left to replay but the three past retention.
  const again = await server.deliveries.retryDeliveries({ destinationId });
  expect(again.job).toMatchObject({ state: JobState.DONE, matched: 0n, notReplayable: 3n });
});

test("once purged, deliveries past retention are gone, not counted", async ({ server }) => {
  const { purged } = await server.waypost.maintenance!.runOnce();
  expect(purged).toBe(3);
  const answer = await server.deliveries.retryDeliveries({ destinationId, statuses: [DeliveryStatus.FAILED, DeliveryStatus.EXPIRED] });
  expect(answer.job).toMatchObject({ matched: 0n, notReplayable: 0n });
});

test("filters by userId and time like ListDeliveries", async ({ server }) => {
  failing = true;
  const done = server.waitForDeliveries(3);
  const sent: string[] = [];
  for (const user of ["alice", "bob", "alice"]) {
    sent.push((await server.tracking(writeKey).track({ track: { userId: user, event: "f" } })).messageId);
  }
  await done;
  failing = false;
  const delivered = server.waitForDeliveries(2, ["delivered"]);
  const answer = await server.deliveries.retryDeliveries({ destinationId, userId: "alice" });
  expect(answer.job!.matched).toBe(2n);
  await delivered;
  const bob = await server.deliveries.listDeliveries({ destinationId, userId: "bob", status: DeliveryStatus.FAILED });
  expect(bob.deliveries.map((d) => d.messageId)).toEqual([sent[1]]);
});
