import { randomUUID } from "node:crypto";
import type { Socket } from "node:net";
import { DiscardPolicy, jetstreamManager } from "@nats-io/jetstream";
import { connect as connectNats } from "@nats-io/transport-node";
import { connect as connectAmqp } from "amqplib";
import { expect, test } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import type { AttemptResult, ClaimedDelivery } from "../../../src/db/job-table/index.js";
import { createAmqpPublisher } from "../../../src/delivery/kinds/amqp/amqp-publisher.js";
import { coalesceFrameWrites } from "../../../src/delivery/kinds/amqp/frame-writes.js";
import { brokerInFlight, createBrokerKind } from "../../../src/delivery/kinds/broker-kind.js";
import type { BrokerCall, BrokerPublisher } from "../../../src/delivery/kinds/broker-publisher.js";
import type { DestinationCommon } from "../../../src/delivery/kinds/kind.js";
import { createNatsPublisher } from "../../../src/delivery/kinds/nats/nats-publisher.js";
import type { NatsSettings } from "../../../src/delivery/kinds/nats/nats-settings.js";
import { createTargetCache } from "../../../src/delivery/kinds/target-cache.js";
import { createAddressGuard } from "../../../src/outbound/address-guard.js";
import { brokerAnswers, testAmqpUrl, testNatsUrl } from "../../helpers/brokers.js";

const amqpUp = await brokerAnswers("amqp", testAmqpUrl);
const natsUp = await brokerAnswers("nats", testNatsUrl);
const guard = createAddressGuard({ allowPrivate: true, allowedCidrs: [] });
const timeoutMs = 10_000;

function call(overrides: Partial<BrokerCall> = {}): BrokerCall {
  const messageId = randomUUID();
  return {
    messageId,
    type: "track",
    event: "Order Completed",
    sourceId: "src",
    destinationId: "dst",
    body: JSON.stringify({ version: 1, type: "track", messageId }),
    timestamp: new Date("2026-11-28T09:00:00.000Z"),
    ...overrides,
  };
}

test("a broker destination may have half the process's slots in flight, or its own concurrency when more", () => {
  expect(brokerInFlight({ concurrency: 1024, perDestinationConcurrency: 64 })).toBe(512);
  expect(brokerInFlight({ concurrency: 100, perDestinationConcurrency: 64 })).toBe(64);
});

test.skipIf(!amqpUp)("AMQP: a round's frames leave in one socket write, not one per message", async () => {
  const model = await connectAmqp(testAmqpUrl);
  try {
    const socket = (model as unknown as { connection: { stream: Socket } }).connection.stream;
    expect(coalesceFrameWrites(model)).toBe(true);
    const channel = await model.createConfirmChannel();
    let writes = 0;
    const write = socket.write.bind(socket);
    socket.write = ((...args: Parameters<Socket["write"]>) => {
      writes++;
      return write(...args);
    }) as Socket["write"];
    // The default exchange with no queue of that name: the broker drops them (no mandatory), and confirms each.
    const confirms = Array.from(
      { length: 40 },
      (_, i) =>
        new Promise<void>((resolve, reject) =>
          channel.publish("", `waypost-no-queue-${randomUUID()}`, Buffer.from(`{"n":${i}}`), {}, (error) =>
            error ? reject(error) : resolve(),
          ),
        ),
    );
    await Promise.all(confirms);
    expect(writes).toBe(1);
  } finally {
    await model.close();
  }
});

test.skipIf(!amqpUp)("AMQP: in one round, only the unroutable and the unsendable calls fail, each with its own cause", async () => {
  const admin = await connectAmqp(testAmqpUrl);
  const channel = await admin.createChannel();
  const exchange = `waypost-test-${randomUUID().slice(0, 8)}`;
  await channel.assertExchange(exchange, "topic", { durable: false, autoDelete: true });
  const { queue } = await channel.assertQueue("", { exclusive: true });
  await channel.bindQueue(queue, exchange, "track.#");
  const publisher = createAmqpPublisher({ url: testAmqpUrl, exchange, routingKey: "{type}.{event}", mandatory: true, guard, timeoutMs });
  try {
    const calls = [
      call(),
      call({ type: "identify", event: undefined }),
      call({ event: "x".repeat(300) }),
      call(),
      call({ type: "page", event: undefined }),
    ];
    expect(await publisher.publishRound(calls)).toEqual([
      { outcome: "success" },
      { outcome: "retryable", error: `amqp: NO_ROUTE exchange "${exchange}" routing key "identify._"` },
      { outcome: "permanent", error: expect.stringMatching(/^amqp: routing key "track\.x+"… is longer than 255 bytes$/) },
      { outcome: "success" },
      { outcome: "retryable", error: `amqp: NO_ROUTE exchange "${exchange}" routing key "page._"` },
    ]);
    expect((await channel.checkQueue(queue)).messageCount).toBe(2);
  } finally {
    await publisher.close();
    await channel.deleteExchange(exchange);
    await admin.close();
  }
});

test.skipIf(!natsUp)("NATS: in one round, only the calls no stream takes fail", async () => {
  const nc = await connectNats({ servers: new URL(testNatsUrl).host });
  const jsm = await jetstreamManager(nc);
  const id = randomUUID().slice(0, 8);
  const stream = `WAYPOST_TEST_ROUND_${id}`;
  await jsm.streams.add({ name: stream, subjects: [`waypost-round-${id}.track`] });
  const publisher = createNatsPublisher({
    servers: [testNatsUrl],
    subject: `waypost-round-${id}.{type}`,
    token: "",
    user: "",
    password: "",
    guard,
    timeoutMs,
  });
  try {
    const results = await publisher.publishRound([call(), call({ type: "identify" }), call()]);
    expect(results).toEqual([
      { outcome: "success" },
      { outcome: "retryable", error: `nats: no stream matches subject "waypost-round-${id}.identify" (no responders)` },
      { outcome: "success" },
    ]);
    expect((await jsm.streams.info(stream)).state.messages).toBe(2);
  } finally {
    await publisher.close();
    await jsm.streams.delete(stream);
    await nc.close();
  }
});

test.skipIf(!natsUp)("NATS: a message the stream refuses (a limit) fails alone, naming the stream's reason and the subject", async () => {
  const nc = await connectNats({ servers: new URL(testNatsUrl).host });
  const jsm = await jetstreamManager(nc);
  const id = randomUUID().slice(0, 8);
  const stream = `WAYPOST_TEST_FULL_${id}`;
  await jsm.streams.add({ name: stream, subjects: [`waypost-full-${id}.>`], max_msgs: 1, discard: DiscardPolicy.New });
  const publisher = createNatsPublisher({
    servers: [testNatsUrl],
    subject: `waypost-full-${id}.{type}`,
    token: "",
    user: "",
    password: "",
    guard,
    timeoutMs,
  });
  try {
    const [first, second] = await publisher.publishRound([call(), call()]);
    expect(first).toEqual({ outcome: "success" });
    expect(second).toEqual({ outcome: "retryable", error: `nats: maximum messages exceeded (subject "waypost-full-${id}.track")` });
  } finally {
    await publisher.close();
    await jsm.streams.delete(stream);
    await nc.close();
  }
});

test.skipIf(!natsUp)("the calls a broker kind gets in one turn go out as one round, their attempts alike but for the outcome", async () => {
  const nc = await connectNats({ servers: new URL(testNatsUrl).host });
  const jsm = await jetstreamManager(nc);
  const id = randomUUID().slice(0, 8);
  const stream = `WAYPOST_TEST_KIND_ROUND_${id}`;
  await jsm.streams.add({ name: stream, subjects: [`waypost-kind-round-${id}.>`] });
  const clock = new ManualClock(new Date("2026-11-28T09:00:00.000Z"));
  const rounds: number[] = [];
  const settings: NatsSettings = { servers: [testNatsUrl], subject: `waypost-kind-round-${id}.{type}`, token: "", user: "", password: "" };
  const kind = createBrokerKind<NatsSettings>({
    clock,
    publishers: createTargetCache({
      clock,
      idleMs: 60_000,
      create: (_id, s): BrokerPublisher => {
        const real = createNatsPublisher({ ...s, guard, timeoutMs });
        // The real publisher, with the size of each round it is given written down.
        return {
          ...real,
          publishRound: (calls) => {
            rounds.push(calls.length);
            return real.publishRound(calls);
          },
        };
      },
    }),
    settingsOf: () => settings,
    targetOf: (s) => s.servers.join(","),
    sourceIdOf: () => "src",
    inFlightLimit: 500,
  });
  try {
    const destination = { id: randomUUID(), kind: "nats", revision: 1 } as unknown as DestinationCommon;
    expect(kind.inFlightLimit?.(destination)).toBe(500);
    const job = (): ClaimedDelivery =>
      ({
        destinationId: destination.id,
        id: randomUUID(),
        messageId: randomUUID(),
        payload: '{"version":1,"type":"track","event":"E"}',
        receivedAt: clock.now(),
      }) as unknown as ClaimedDelivery;
    const attempts: AttemptResult[] = (await Promise.all(Array.from({ length: 30 }, () => kind.deliver(job(), destination, "{}")))).flat();
    expect(rounds).toEqual([30]);
    expect(attempts.map((a) => a.outcome)).toEqual(attempts.map(() => "success"));
    expect(new Set(attempts.map((a) => a.attemptedAt)).size).toBe(1);
    expect(new Set(attempts.map((a) => a.latencyMs)).size).toBe(1);
    // One batch operation: the same batch object on every attempt, its calls counted; the next turn opens another.
    expect(new Set(attempts.map((a) => a.batch)).size).toBe(1);
    expect(attempts[0]!.batch?.calls).toBe(30);
    const [next] = await kind.deliver(job(), destination, "{}");
    expect(rounds).toEqual([30, 1]);
    expect(next!.batch?.id).not.toBe(attempts[0]!.batch?.id);
    expect((await jsm.streams.info(stream)).state.messages).toBe(31);
  } finally {
    await kind.close();
    await jsm.streams.delete(stream);
    await nc.close();
  }
});
