import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { expect } from "vitest";
import { TestOutcome } from "../../gen/waypost/v1/destination_pb.js";
import { JobState } from "../../gen/waypost/v1/job_pb.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";

const test = testWith();

const deliveryCount = async (server: TestServer, destinationId: string) =>
  Number((await server.pool.query("SELECT count(*) FROM deliveries WHERE destination_id = $1", [destinationId])).rows[0].count);

test("TestDestination runs a draft over recent calls and sends nothing", async ({ server, receiver }) => {
  const source = await server.createSource();
  const tracking = server.tracking(source.writeKey);
  const page = await tracking.page({ page: { userId: "u", name: "Home" } });
  const small = await tracking.track({ track: { userId: "u", event: "Order Completed", properties: { total: 5 } } });
  const big = await tracking.track({ track: { userId: "u", event: "Order Completed", properties: { total: 500, email: "x@y" } } });
  const boom = await tracking.track({ track: { userId: "u", event: "Boom" } });
  const requestsBefore = receiver.requests.length;
  const { calls } = await server.destinations.testDestination({
    destination: {
      sourceIds: [source.id],
      filter: { $or: [{ type: "track" }, { type: "page" }] },
      dropFields: ["properties.email"],
      transform: `function transform(e) {
        if (e.event === "Boom") throw new Error("boom");
        if (e.type === "page") return null;
        if (e.properties.total < 10) return null;
        e.event = "order";
        return e;
      }`,
    },
  });
  expect(calls.map((c) => [c.messageId, c.outcome])).toEqual([
    [boom.messageId, TestOutcome.TRANSFORM_ERROR],
    [big.messageId, TestOutcome.SEND],
    [small.messageId, TestOutcome.DROPPED_BY_TRANSFORM],
    [page.messageId, TestOutcome.DROPPED_BY_TRANSFORM],
  ]);
  expect(calls[0]!.error).toBe("transform: Error: boom (line 2)");
  expect(JSON.parse(calls[1]!.body)).toMatchObject({ event: "order", properties: { total: 500 } });
  expect(JSON.parse(calls[1]!.body).properties.email).toBeUndefined();
  expect(calls[1]).toMatchObject({ type: "track", event: "Order Completed", sourceId: source.id });

  // Of an existing destination, by id, over given calls, with a draft filter.
  const existing = await server.createDestination({ name: "x", sourceIds: [source.id], webhooks: [{ url: receiver.url }], enabled: false });
  const byIds = await server.destinations.testDestination({
    destination: { id: existing.id, filter: { "properties.total": { $gte: 100 } } },
    messageIds: [small.messageId, big.messageId],
  });
  expect(byIds.calls.map((c) => c.outcome)).toEqual([TestOutcome.FILTERED, TestOutcome.SEND]);
  expect(await deliveryCount(server, existing.id)).toBe(0);
  expect(receiver.requests.length).toBe(requestsBefore);
});

test("BackfillDestination queues the range's calls that pass the filter, once", async ({ server, receiver }) => {
  const source = await server.createSource();
  const tracking = server.tracking(source.writeKey);
  await tracking.track({ track: { userId: "u", event: "Too early", properties: { total: 500 } } });
  const wanted = await tracking.track({ track: { userId: "u", event: "Order Completed", properties: { total: 500 } } });
  // The range starts at the wanted call: the one before it is left out.
  const since: Date = (await server.pool.query("SELECT received_at FROM messages WHERE message_id = $1", [wanted.messageId])).rows[0]
    .received_at;
  await tracking.track({ track: { userId: "u", event: "Order Completed", properties: { total: 5 } } });
  await tracking.identify({ identify: { userId: "u" } });
  const destination = await server.createDestination({
    name: "new crm",
    sourceIds: [source.id],
    webhooks: [{ url: receiver.url }],
    enabled: false,
    filter: { "properties.total": { $gt: 100 } },
  });
  const range = { destinationId: destination.id, since: timestampFromDate(since) };
  const first = await server.destinations.backfillDestination(range);
  // Three calls in the range; the filter passes one of them.
  expect(first.backfill).toMatchObject({ destinationId: destination.id, state: JobState.RUNNING, candidates: 3n });
  await server.waypost.jobs!.idle();
  const ended = await server.destinations.getBackfill({ id: first.backfill!.id });
  expect(ended.backfill).toMatchObject({ state: JobState.DONE, candidates: 3n, created: 1n, filtered: 2n });
  const rows = await server.pool.query(
    "SELECT m.message_id FROM deliveries d JOIN messages m ON m.id = d.message_pk WHERE d.destination_id = $1",
    [destination.id],
  );
  expect(rows.rows.map((r) => r.message_id)).toEqual([wanted.messageId]);
  await server.destinations.backfillDestination(range);
  await server.destinations.backfillDestination(range);
  await server.waypost.jobs!.idle();
  expect(await deliveryCount(server, destination.id)).toBe(1);
});
