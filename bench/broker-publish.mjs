// @ts-check
// Where a broker publish's cost goes: N calls published through the AMQP and
// NATS JetStream publishers (the broker kinds' delivery cores) to the
// machine's RabbitMQ and JetStream, one at a time and with many in flight,
// beside the template render alone. Wall time per publish and this
// process's CPU per publish (user + system); the brokers' own CPU is not
// counted. Run `npm run build` first (it imports dist/).
//
//   node bench/broker-publish.mjs [COUNT=20000] [INFLIGHT=64] [ONLY=amqp|nats]
//
// Env: WAYPOST_TEST_AMQP_URL (amqp://guest:guest@127.0.0.1:5672), WAYPOST_TEST_NATS_URL (nats://127.0.0.1:4222).
import { randomUUID } from "node:crypto";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect as natsConnect } from "@nats-io/transport-node";
import { connect as amqpConnect } from "amqplib";
import { createAmqpPublisher } from "../dist/src/delivery/kinds/amqp/amqp-publisher.js";
import { createNatsPublisher } from "../dist/src/delivery/kinds/nats/nats-publisher.js";
import { natsSubjectTemplate } from "../dist/src/delivery/kinds/nats/nats-settings.js";
import { createAddressGuard } from "../dist/src/outbound/address-guard.js";

const count = Number(process.argv[2] ?? 20_000);
const inflight = Number(process.argv[3] ?? 64);
const only = process.argv[4];
const amqpUrl = process.env.WAYPOST_TEST_AMQP_URL || "amqp://guest:guest@127.0.0.1:5672";
const natsUrl = process.env.WAYPOST_TEST_NATS_URL || "nats://127.0.0.1:4222";
const guard = createAddressGuard({ allowPrivate: true, allowedCidrs: [] });
const id = randomUUID().slice(0, 8);
// A body the size of a typical track call (about 600 bytes).
const body = JSON.stringify({
  version: 1,
  type: "track",
  userId: "user-1",
  event: "Order Completed",
  properties: {
    orderId: "o-1",
    total: 42.5,
    currency: "EUR",
    products: [
      { sku: "a", qty: 1 },
      { sku: "b", qty: 2 },
    ],
  },
  context: { library: { name: "waypost-client", version: "0.2.0" }, ip: "203.0.113.9", userAgent: "Mozilla/5.0 (X11; Linux x86_64)" },
  timestamp: "2026-11-28T09:00:00.000Z",
  messageId: "m",
  anonymousId: "anon-1",
});

/** @param {number} i @returns {import("../dist/src/delivery/kinds/broker-publisher.js").BrokerCall} */
function call(i) {
  return {
    messageId: `${id}-${i}`,
    type: "track",
    event: "Order Completed",
    sourceId: "7f0c2a52-0000-4000-8000-000000000001",
    destinationId: "7f0c2a52-0000-4000-8000-000000000002",
    body,
    timestamp: new Date(),
    traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
  };
}

/**
 * @param {string} name
 * @param {import("../dist/src/delivery/kinds/broker-publisher.js").BrokerPublisher} publisher
 * @param {number} lanes
 */
async function measure(name, publisher, lanes) {
  // Warm-up: opens the connection, and the JIT sees the path.
  for (let i = 0; i < 200; i++) await publisher.publish(call(-1 - i));
  let next = 0;
  let failed = 0;
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < count) {
        const result = await publisher.publish(call(next++));
        if (result.outcome !== "success") failed++;
      }
    }),
  );
  const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
  const used = process.cpuUsage(cpu);
  const line = {
    scenario: name,
    count,
    inflight: lanes,
    failed,
    per_s: Math.round((count / wallMs) * 1000),
    wall_us_per_publish: Number(((wallMs * 1000) / count).toFixed(1)),
    cpu_us_per_publish: Number(((used.user + used.system) / count).toFixed(1)),
  };
  console.log(JSON.stringify(line));
}

// The template render alone, as every publish does it.
{
  const template = natsSubjectTemplate("subject", "waypost.{type}.{event}");
  const values = call(0);
  let sink = 0;
  const started = process.hrtime.bigint();
  for (let i = 0; i < 1_000_000; i++) sink += template.render(values).length;
  const ns = Number(process.hrtime.bigint() - started) / 1_000_000;
  console.log(JSON.stringify({ scenario: "template-render", ns_per_render: Math.round(ns), sink: sink > 0 }));
}

// AMQP: a topic exchange with one bound queue (which the run purges as it goes).
if (only !== "nats") {
  const admin = await amqpConnect(amqpUrl);
  const channel = await admin.createChannel();
  const exchange = `waypost-bench-${id}`;
  await channel.assertExchange(exchange, "topic", { durable: false });
  const { queue } = await channel.assertQueue(exchange, { durable: false, autoDelete: false });
  await channel.bindQueue(queue, exchange, "#");
  const publisher = createAmqpPublisher({
    url: amqpUrl,
    exchange,
    routingKey: "{type}.{event}",
    mandatory: true,
    guard,
    timeoutMs: 30_000,
  });
  await measure("amqp-sequential", publisher, 1);
  await channel.purgeQueue(queue);
  await measure("amqp-inflight", publisher, inflight);
  await publisher.close();
  await channel.deleteQueue(queue);
  await channel.deleteExchange(exchange);
  await admin.close();
}

// NATS: a file stream over the subject, deleted afterwards.
if (only !== "amqp") {
  const nc = await natsConnect({ servers: new URL(natsUrl).host });
  const jsm = await jetstreamManager(nc);
  const stream = `WAYPOST_BENCH_${id}`;
  await jsm.streams.add({ name: stream, subjects: [`waypost-bench-${id}.>`] });
  const publisher = createNatsPublisher({
    servers: [natsUrl],
    subject: `waypost-bench-${id}.{type}.{event}`,
    token: "",
    user: "",
    password: "",
    guard,
    timeoutMs: 30_000,
  });
  await measure("nats-sequential", publisher, 1);
  await measure("nats-inflight", publisher, inflight);
  await publisher.close();
  await jsm.streams.delete(stream);
  await nc.close();
}
