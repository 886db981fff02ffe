import { randomUUID } from "node:crypto";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { expect, test } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import type { ClaimedDelivery } from "../../../src/db/job-table/index.js";
import type { DestinationCommon } from "../../../src/delivery/kinds/kind.js";
import { createBrokerKind, routingFields } from "../../../src/delivery/kinds/broker-kind.js";
import { createNatsPublisher } from "../../../src/delivery/kinds/nats/nats-publisher.js";
import type { NatsSettings } from "../../../src/delivery/kinds/nats/nats-settings.js";
import { createTargetCache } from "../../../src/delivery/kinds/target-cache.js";
import { emptyCall } from "../../../src/calls/call.js";
import { buildCallPayload } from "../../../src/ingest/payload.js";
import { createAddressGuard } from "../../../src/outbound/address-guard.js";
import { brokerAnswers, testNatsUrl } from "../../helpers/brokers.js";

const available = await brokerAnswers("nats", testNatsUrl);
const receivedAt = new Date("2026-11-28T09:00:00.000Z");

test("routing fields come from the stored call: the type, and a track call's top-level event only", () => {
  const track = {
    ...emptyCall("track"),
    // Neither a user id nor a property named event is the event.
    userId: 'u,"event":"not this"',
    event: "Order Completed",
    properties: { event: "nested", nested: { event: "deeper" } },
  };
  expect(routingFields(buildCallPayload(track, "m1", receivedAt))).toEqual({ type: "track", event: "Order Completed" });
  const escaped = { ...emptyCall("track"), event: 'say "hi" \\ ok' };
  expect(routingFields(buildCallPayload(escaped, "m2", receivedAt))).toEqual({ type: "track", event: 'say "hi" \\ ok' });
  const page = { ...emptyCall("page"), name: "Home", properties: { event: "x" } };
  expect(routingFields(buildCallPayload(page, "m3", receivedAt))).toEqual({ type: "page", event: undefined });
  // A payload not in the stored layout is parsed; its type can never hold a dot or a wildcard.
  expect(routingFields(JSON.stringify({ type: "delete", userId: "u" }))).toEqual({ type: "delete", event: undefined });
  expect(routingFields(JSON.stringify({ type: "a.*.>" }))).toEqual({ type: "a", event: undefined });
});

test.skipIf(!available)("a broker kind delivers through the kinds' delivery seam: one attempt per call, the stream holds it", async () => {
  const id = randomUUID().slice(0, 8);
  const nc = await connect({ servers: new URL(testNatsUrl).host });
  const jsm = await jetstreamManager(nc);
  const stream = `WAYPOST_TEST_KIND_${id}`;
  await jsm.streams.add({ name: stream, subjects: [`waypost-kind-${id}.>`] });
  const clock = new ManualClock(receivedAt);
  const guard = createAddressGuard({ allowPrivate: true, allowedCidrs: [] });
  const settings: NatsSettings = {
    servers: [testNatsUrl],
    subject: `waypost-kind-${id}.{sourceId}.{type}.{event}`,
    token: "",
    user: "",
    password: "",
  };
  const opened: number[] = [];
  const kind = createBrokerKind<NatsSettings>({
    clock,
    publishers: createTargetCache({
      clock,
      idleMs: 60_000,
      create: (destinationId, s) => {
        opened.push(Date.now());
        return createNatsPublisher({ ...s, guard, timeoutMs: 10_000, connectionName: destinationId });
      },
    }),
    settingsOf: () => settings,
    targetOf: (s) => s.servers.join(","),
    sourceIdOf: () => "src-1",
  });
  try {
    const destination = { id: randomUUID(), kind: "nats", revision: 4 } as unknown as DestinationCommon;
    const call = { ...emptyCall("track"), event: "Signed Up" };
    const messageId = randomUUID();
    const payload = buildCallPayload(call, messageId, receivedAt);
    const job = {
      destinationId: destination.id,
      id: "1",
      messageId,
      payload,
      receivedAt,
      traceparent: null,
      tracestate: null,
    } as unknown as ClaimedDelivery;
    const shaped = payload.replace('"Signed Up"', '"Signed Up","shaped":true');

    const [attempt, ...more] = await kind.deliver(job, destination, shaped);
    expect(more).toEqual([]);
    expect(attempt).toMatchObject({
      urlIndex: 0,
      url: testNatsUrl,
      attemptedAt: receivedAt,
      outcome: "success",
      statusCode: null,
      error: null,
      responseBody: null,
    });
    await kind.deliver({ ...job, messageId: randomUUID() }, destination, payload);
    expect(opened).toHaveLength(1);

    const first = await jsm.streams.getMessage(stream, { seq: 1 });
    expect(first!.subject).toBe(`waypost-kind-${id}.src-1.track.signed_up`);
    expect(first!.string()).toBe(shaped);
    expect(first!.header.get("Nats-Msg-Id")).toBe(messageId);
  } finally {
    await kind.close();
    await jsm.streams.delete(stream);
    await nc.close();
  }
});
