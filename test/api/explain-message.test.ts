import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "vitest";
import { Fate } from "../../gen/waypost/v1/delivery_pb.js";
import { testWith } from "../helpers/fixtures.js";
import { startReceiver } from "../helpers/receiver.js";
import { completionsOf } from "../helpers/server.js";

const test = testWith();

test("every fate, as recorded when the call was routed", async ({ server, receiver }) => {
  const source = await server.createSource("shop");
  const other = await server.createSource("other");
  const hook = { webhooks: [{ url: receiver.url }] };
  const delivered = await server.createDestination({ name: "a delivered", sourceIds: [source.id], ...hook });
  const disabled = await server.createDestination({ name: "b disabled", sourceIds: [source.id], enabled: false, ...hook });
  const filtered = await server.createDestination({ name: "c filtered", sourceIds: [source.id], filter: { type: "identify" }, ...hook });
  const off = await server.createDestination({ name: "d off", sourceIds: [source.id], ...hook });
  const unconnected = await server.createDestination({ name: "e elsewhere", sourceIds: [other.id], ...hook });
  const done = completionsOf(server, delivered.id, 1);
  const { messageId } = await server
    .tracking(source.writeKey)
    .track({ track: { userId: "u1", event: "Order Completed", integrations: { "d off": false } } });
  await done;
  const later = await server.createDestination({ name: "f later", sourceIds: [source.id], ...hook });
  const laterElsewhere = await server.createDestination({ name: "g later elsewhere", sourceIds: [other.id], ...hook });
  // Today's settings do not rewrite history.
  await server.destinations.updateDestination({ destination: { id: disabled.id, enabled: true }, updateMask: { paths: ["enabled"] } });
  await server.destinations.updateDestination({ destination: { id: filtered.id }, updateMask: { paths: ["filter"] } });

  const explained = await server.deliveries.explainMessage({ messageId });
  expect(explained.call).toMatchObject({ sourceId: source.id, messageId, type: "track", event: "Order Completed", userId: "u1" });
  expect(JSON.parse(explained.call!.body)).toMatchObject({ messageId, event: "Order Completed" });
  const fates = explained.destinations.map((d) => ({ id: d.destinationId, name: d.destinationName, fate: d.fate, reason: d.reason }));
  expect(fates).toEqual([
    { id: delivered.id, name: "a delivered", fate: Fate.DELIVERED, reason: "" },
    { id: disabled.id, name: "b disabled", fate: Fate.DISABLED, reason: "" },
    { id: filtered.id, name: "c filtered", fate: Fate.FILTERED, reason: "filter" },
    { id: off.id, name: "d off", fate: Fate.INTEGRATIONS_OFF, reason: "" },
    { id: unconnected.id, name: "e elsewhere", fate: Fate.NOT_CONNECTED, reason: "" },
    { id: later.id, name: "f later", fate: Fate.CREATED_LATER, reason: "" },
    // Created after the call, but never connected to its source: its age is not why it missed the call.
    { id: laterElsewhere.id, name: "g later elsewhere", fate: Fate.NOT_CONNECTED, reason: "" },
  ]);
  const withDelivery = explained.destinations[0]!;
  expect(withDelivery.deliveryId).not.toBe("");
  expect(withDelivery.attemptCount).toBe(1);
});

test("retrying comes from the delivery, with its attempts", async ({ server }) => {
  const source = await server.createSource();
  const failing = await startReceiver({ respond: () => ({ status: 503 }) });
  try {
    const destination = await server.createDestination({ name: "failing", sourceIds: [source.id], webhooks: [{ url: failing.url }] });
    const done = completionsOf(server, destination.id, 1);
    const { messageId } = await server.tracking(source.writeKey).identify({ identify: { userId: "u2" } });
    expect((await done)[0]!.status).toBe("retrying");
    const explained = await server.deliveries.explainMessage({ messageId, sourceId: source.id });
    expect(explained.destinations.find((d) => d.destinationId === destination.id)).toMatchObject({ fate: Fate.RETRYING, attemptCount: 1 });
  } finally {
    await failing.close();
  }
});

test("an unknown messageId is not_found; one several sources used needs sourceId", async ({ server }) => {
  const missing = await server.deliveries.explainMessage({ messageId: "no-such-call" }).catch((e: unknown) => ConnectError.from(e));
  expect(missing).toBeInstanceOf(ConnectError);
  expect((missing as ConnectError).code).toBe(Code.NotFound);
  const first = await server.createSource();
  const second = await server.createSource();
  await server.tracking(first.writeKey).track({ track: { messageId: "shared-id", userId: "u", event: "x" } });
  await server.tracking(second.writeKey).track({ track: { messageId: "shared-id", userId: "u", event: "x" } });
  const ambiguous = await server.deliveries.explainMessage({ messageId: "shared-id" }).catch((e: unknown) => ConnectError.from(e));
  expect((ambiguous as ConnectError).code).toBe(Code.InvalidArgument);
  expect((ambiguous as ConnectError).rawMessage).toContain(first.id);
  expect((ambiguous as ConnectError).rawMessage).toContain(second.id);
  const one = await server.deliveries.explainMessage({ messageId: "shared-id", sourceId: second.id });
  expect(one.call!.sourceId).toBe(second.id);
});
