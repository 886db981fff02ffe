import { randomUUID } from "node:crypto";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect as connectNats } from "@nats-io/transport-node";
import { type ConsumeMessage, connect as connectAmqp } from "amqplib";
import { expect } from "vitest";
import { DestinationKind } from "../../../gen/waypost/v1/destination_pb.js";
import { brokerAnswers, testAmqpUrl, testNatsUrl } from "../../helpers/brokers.js";
import { testWith } from "../../helpers/fixtures.js";
import type { TestServer } from "../../helpers/server.js";
import { completionsOf } from "../../helpers/server.js";

// AMQP and NATS destinations end to end: created over the RPC like any
// kind, with a filter and a dropped field, delivered to the machine's
// RabbitMQ and NATS JetStream, their fates and attempts recorded.
const [amqpUp, natsUp] = await Promise.all([brokerAnswers("amqp", testAmqpUrl), brokerAnswers("nats", testNatsUrl)]);

let sourceId = "";
let writeKey = "";

const test = testWith();
test.beforeAll(async ({ server }) => {
  const source = await server.createSource();
  sourceId = source.id;
  writeKey = source.writeKey;
});

/** Three calls: two track calls that pass the filter (one with a field the destination drops), one page call that does not. */
async function sendCalls(server: TestServer): Promise<void> {
  const client = server.tracking(writeKey);
  await client.track({ track: { userId: "u1", event: "Order Completed", properties: { total: 5, secret: "drop me" } } });
  await client.track({ track: { userId: "u2", event: "Signed Up" } });
  await client.page({ page: { userId: "u3", name: "Home" } });
}

const rules = { filter: { type: "track" }, dropFields: ["properties.secret"] };

test.skipIf(!amqpUp)(
  "an AMQP destination publishes every passing call with confirms: message_id, type, routing key, the shaped body",
  async ({ server }) => {
    const id = randomUUID().slice(0, 8);
    const exchange = `waypost-e2e-${id}`;
    const admin = await connectAmqp(testAmqpUrl);
    const channel = await admin.createChannel();
    try {
      await channel.assertExchange(exchange, "topic", { durable: false, autoDelete: true });
      const { queue } = await channel.assertQueue("", { exclusive: true });
      await channel.bindQueue(queue, exchange, "#");
      const received: ConsumeMessage[] = [];
      const two = new Promise<void>((resolve) => {
        void channel.consume(queue, (message) => {
          if (message) received.push(message);
          if (received.length === 2) resolve();
        });
      });
      const destination = await server.createDestination({
        name: `amqp-${id}`,
        sourceIds: [sourceId],
        kind: DestinationKind.AMQP,
        amqp: { url: testAmqpUrl, exchange, routingKey: "{sourceId}.{type}.{event}" },
        ...rules,
      });
      // The password is write-only.
      const password = new URL(testAmqpUrl).password;
      expect(destination.amqp?.url).not.toContain(`:${password}@`);
      expect(destination.amqp?.url).toContain(":***@");
      expect(destination.amqp).toMatchObject({ exchange, routingKey: "{sourceId}.{type}.{event}", mandatory: true, hasAmqpUrl: true });
      const done = completionsOf(server, destination.id, 2);
      await sendCalls(server);
      await two;
      const completions = await done;
      expect(completions.map((c) => c.status)).toEqual(["delivered", "delivered"]);

      const keys = received.map((m) => m.fields.routingKey).sort();
      expect(keys).toEqual([`${sourceId}.track.order_completed`, `${sourceId}.track.signed_up`]);
      for (const message of received) {
        expect(message.properties).toMatchObject({ contentType: "application/json", type: "track", appId: "waypost", deliveryMode: 2 });
        expect(message.properties.messageId).toMatch(/^[0-9a-f-]{36}$/);
      }
      const order = received.find((m) => m.fields.routingKey.endsWith("order_completed"))!;
      const body = JSON.parse(order.content.toString()) as { properties: Record<string, unknown> };
      expect(body.properties).toEqual({ total: 5 });

      // The attempt names the broker without its password, and the delivery's fate is delivered. On the call log the
      // filtered call is a pending delivery until its page is read: wait until every stored call has been.
      await server.waypost.delivery!.caughtUp();
      const { deliveries } = await server.deliveries.listDeliveries({ destinationId: destination.id });
      expect(deliveries).toHaveLength(2);
      const { delivery } = await server.deliveries.getDelivery({ id: deliveries[0]!.id });
      expect(delivery?.attempts[0]?.url).toContain(`exchange "${exchange}"`);
      expect(delivery?.attempts[0]?.url).not.toContain(`:${password}@`);
    } finally {
      await channel.close().catch(() => {});
      await admin.close();
    }
  },
);

test.skipIf(!amqpUp)("AMQP: mandatory with no binding fails the attempt naming NO_ROUTE, retried on the schedule", async ({ server }) => {
  const id = randomUUID().slice(0, 8);
  const exchange = `waypost-e2e-unbound-${id}`;
  const admin = await connectAmqp(testAmqpUrl);
  const channel = await admin.createChannel();
  try {
    await channel.assertExchange(exchange, "topic", { durable: false, autoDelete: false });
    const destination = await server.createDestination({
      name: `amqp-unbound-${id}`,
      sourceIds: [sourceId],
      kind: DestinationKind.AMQP,
      amqp: { url: testAmqpUrl, exchange },
      filter: { type: "page" },
    });
    const done = completionsOf(server, destination.id, 1);
    await server.tracking(writeKey).page({ page: { userId: "u", name: "Nowhere" } });
    const [completion] = await done;
    expect(completion?.status).toBe("retrying");
    expect(completion?.attempts[0]?.error).toContain("NO_ROUTE");
    await server.destinations.deleteDestination({ id: destination.id });
  } finally {
    await channel.deleteExchange(exchange).catch(() => {});
    await channel.close().catch(() => {});
    await admin.close();
  }
});

test.skipIf(!natsUp)(
  "a NATS destination publishes every passing call to JetStream with Nats-Msg-Id, on the rendered subject",
  async ({ server }) => {
    const id = randomUUID().slice(0, 8);
    const nc = await connectNats({ servers: new URL(testNatsUrl).host });
    const jsm = await jetstreamManager(nc);
    const stream = `WAYPOST_E2E_${id}`;
    await jsm.streams.add({ name: stream, subjects: [`waypost-e2e-${id}.>`] });
    try {
      const destination = await server.createDestination({
        name: `nats-${id}`,
        sourceIds: [sourceId],
        kind: DestinationKind.NATS,
        nats: { servers: [testNatsUrl], subject: `waypost-e2e-${id}.{type}.{event}` },
        ...rules,
      });
      expect(destination.nats).toMatchObject({ servers: [new URL(testNatsUrl).href.replace(/\/$/, "")], hasToken: false });
      const done = completionsOf(server, destination.id, 2);
      await sendCalls(server);
      expect((await done).map((c) => c.status)).toEqual(["delivered", "delivered"]);
      const messages = await Promise.all([1, 2].map((seq) => jsm.streams.getMessage(stream, { seq })));
      expect(messages.map((m) => m!.subject).sort()).toEqual([
        `waypost-e2e-${id}.track.order_completed`,
        `waypost-e2e-${id}.track.signed_up`,
      ]);
      for (const message of messages) expect(message!.header.get("Nats-Msg-Id")).toMatch(/^[0-9a-f-]{36}$/);
      const order = messages.find((m) => m!.subject.endsWith("order_completed"))!;
      expect((JSON.parse(order.string()) as { properties: unknown }).properties).toEqual({ total: 5 });
    } finally {
      await jsm.streams.delete(stream);
      await nc.close();
    }
  },
);

test.skipIf(!natsUp)("NATS: no stream for the subject fails the attempt naming the subject", async ({ server }) => {
  const id = randomUUID().slice(0, 8);
  const destination = await server.createDestination({
    name: `nats-nostream-${id}`,
    sourceIds: [sourceId],
    kind: DestinationKind.NATS,
    nats: { servers: [testNatsUrl], subject: `waypost-nostream-${id}.{type}` },
    filter: { type: "page" },
  });
  const done = completionsOf(server, destination.id, 1);
  await server.tracking(writeKey).page({ page: { userId: "u", name: "Nowhere" } });
  const [completion] = await done;
  expect(completion?.status).toBe("retrying");
  expect(completion?.attempts[0]?.error).toContain(`waypost-nostream-${id}.page`);
  await server.destinations.deleteDestination({ id: destination.id });
});
