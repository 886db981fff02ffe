import { randomUUID } from "node:crypto";
import net from "node:net";
import { type ChannelModel, type ConsumeMessage, connect } from "amqplib";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createAmqpPublisher } from "../../../src/delivery/kinds/amqp/amqp-publisher.js";
import type { BrokerCall, BrokerPublisher } from "../../../src/delivery/kinds/broker-publisher.js";
import { createAddressGuard } from "../../../src/outbound/address-guard.js";
import { startTcpProxy } from "../../helpers/tcp-proxy.js";
import { brokerAnswers, closeRabbitConnections, testAmqpUrl } from "../../helpers/brokers.js";

const available = await brokerAnswers("amqp", testAmqpUrl);
// The broker is on loopback: the operator's allowance, as in a deployment next to its broker.
const guard = createAddressGuard({ allowPrivate: true, allowedCidrs: [] });
const timeoutMs = 10_000;

function call(overrides: Partial<BrokerCall> = {}): BrokerCall {
  const messageId = randomUUID();
  return {
    messageId,
    type: "track",
    event: "Order Completed",
    sourceId: "7f0c2a52-0000-4000-8000-000000000001",
    destinationId: "7f0c2a52-0000-4000-8000-000000000002",
    body: JSON.stringify({ version: 1, type: "track", event: "Order Completed", messageId }),
    timestamp: new Date("2026-11-28T09:00:00.000Z"),
    ...overrides,
  };
}

describe.skipIf(!available)("AMQP publisher against RabbitMQ", () => {
  let admin: ChannelModel;
  const publishers: BrokerPublisher[] = [];
  const exchanges: string[] = [];
  const queues: string[] = [];

  beforeAll(async () => {
    admin = await connect(testAmqpUrl);
  });
  afterAll(async () => {
    await Promise.all(publishers.map((p) => p.close()));
    if (!admin) return;
    const channel = await admin.createChannel();
    for (const queue of queues) await channel.deleteQueue(queue);
    for (const exchange of exchanges) await channel.deleteExchange(exchange);
    await admin.close();
  });

  /** A topic exchange and a queue bound to it with `binding` (none: unroutable), unique to the test. */
  async function declare(binding?: string): Promise<{ exchange: string; queue: string }> {
    const id = randomUUID().slice(0, 8);
    const channel = await admin.createChannel();
    const exchange = `waypost-test-${id}`;
    await channel.assertExchange(exchange, "topic", { durable: false, autoDelete: false });
    exchanges.push(exchange);
    const { queue } = await channel.assertQueue(`waypost-test-${id}`, { durable: false, exclusive: false });
    queues.push(queue);
    if (binding !== undefined) await channel.bindQueue(queue, exchange, binding);
    await channel.close();
    return { exchange, queue };
  }

  function publisher(options: { exchange: string; routingKey?: string; mandatory?: boolean; url?: string; name?: string }) {
    const p = createAmqpPublisher({
      url: options.url ?? testAmqpUrl,
      exchange: options.exchange,
      routingKey: options.routingKey ?? "{type}",
      mandatory: options.mandatory ?? true,
      guard,
      timeoutMs,
      connectionName: options.name,
    });
    publishers.push(p);
    return p;
  }

  /** Reads the queue until `count` messages arrived (by the broker's push, not by polling). */
  async function consume(queue: string, count: number): Promise<ConsumeMessage[]> {
    const channel = await admin.createChannel();
    const received: ConsumeMessage[] = [];
    await new Promise<void>((resolve) => {
      void channel.consume(queue, (message) => {
        if (!message) return;
        received.push(message);
        channel.ack(message);
        if (received.length === count) resolve();
      });
    });
    await channel.close();
    return received;
  }

  test("a queue bound to the exchange receives every call, with its properties and headers; each message_id once", async () => {
    const { exchange, queue } = await declare("#");
    const p = publisher({ exchange, routingKey: "calls.{type}.{event}" });
    const calls = Array.from({ length: 50 }, (_, i) =>
      call({
        traceparent: `00-${"a".repeat(30)}${String(i).padStart(2, "0")}-${"b".repeat(16)}-01`,
        tracestate: i % 2 === 0 ? "vendor=1" : null,
        type: i % 5 === 0 ? "identify" : "track",
        event: i % 5 === 0 ? "" : "Order Completed",
      }),
    );
    const results = await Promise.all(calls.map((c) => p.publish(c)));
    expect(results).toEqual(calls.map(() => ({ outcome: "success" })));

    const received = await consume(queue, calls.length);
    const byId = new Map<string, number>();
    for (const message of received) byId.set(message.properties.messageId, (byId.get(message.properties.messageId) ?? 0) + 1);
    expect([...byId.values()].every((n) => n === 1)).toBe(true);
    expect([...byId.keys()].sort()).toEqual(calls.map((c) => c.messageId).sort());

    for (const message of received) {
      const sent = calls.find((c) => c.messageId === message.properties.messageId)!;
      expect(message.content.toString()).toBe(sent.body);
      expect(message.fields.exchange).toBe(exchange);
      expect(message.fields.routingKey).toBe(sent.type === "identify" ? "calls.identify._" : "calls.track.order_completed");
      expect(message.properties).toMatchObject({
        contentType: "application/json",
        type: sent.type,
        appId: "waypost",
        deliveryMode: 2,
        timestamp: Date.parse("2026-11-28T09:00:00.000Z") / 1000,
      });
      const headers = message.properties.headers ?? {};
      expect(headers.traceparent).toBe(sent.traceparent);
      expect(headers.tracestate).toBe(sent.tracestate ?? undefined);
    }
  });

  test("mandatory with no binding fails the attempt naming NO_ROUTE; without mandatory the broker drops it", async () => {
    const { exchange } = await declare();
    const refused = await publisher({ exchange }).publish(call());
    expect(refused).toEqual({ outcome: "retryable", error: `amqp: NO_ROUTE exchange "${exchange}" routing key "track"` });
    expect(await publisher({ exchange, mandatory: false }).publish(call())).toEqual({ outcome: "success" });
  });

  test("a wrong password fails naming the cause, never the password", async () => {
    const url = new URL(testAmqpUrl);
    url.password = "not-the-password-xyz";
    const result = await publisher({ exchange: "", url: url.href }).publish(call());
    expect(result.outcome).toBe("retryable");
    expect(result.error).toMatch(/^amqp: cannot connect to .*ACCESS_REFUSED/);
    expect(result.error).not.toContain("not-the-password-xyz");
  });

  test("a broker host the address guard refuses is never contacted", async () => {
    const strict = createAddressGuard({ allowPrivate: false, allowedCidrs: [] });
    const p = createAmqpPublisher({ url: testAmqpUrl, exchange: "", routingKey: "{type}", mandatory: true, guard: strict, timeoutMs });
    publishers.push(p);
    const result = await p.publish(call());
    expect(result.outcome).toBe("retryable");
    expect(result.error).toMatch(/^amqp: cannot connect to .*refused: .*WAYPOST_ALLOW_PRIVATE_DESTINATIONS/);
  });

  test("an exchange deleted mid-stream fails the attempts naming NOT_FOUND; declared again, the next publish reopens and delivers", async () => {
    const { exchange, queue } = await declare("#");
    const p = publisher({ exchange });
    const first = call();
    expect(await p.publish(first)).toEqual({ outcome: "success" });
    const channel = await admin.createChannel();
    await channel.deleteExchange(exchange);
    const lost = call();
    const failed = await p.publish(lost);
    expect(failed.outcome).toBe("retryable");
    expect(failed.error).toMatch(/NOT_FOUND - no exchange/);
    await channel.assertExchange(exchange, "topic", { durable: false });
    await channel.bindQueue(queue, exchange, "#");
    await channel.close();
    // The retry, as the schedule would make it.
    expect(await p.publish(lost)).toEqual({ outcome: "success" });
    const ids = (await consume(queue, 2)).map((m) => m.properties.messageId);
    expect(ids.sort()).toEqual([first.messageId, lost.messageId].sort());
  });

  test("a connection the broker closes mid-stream is reopened and no call is lost", async () => {
    const { exchange, queue } = await declare("#");
    const name = `waypost-test-${randomUUID().slice(0, 8)}`;
    const p = publisher({ exchange, name });
    const calls: BrokerCall[] = [];
    const errors: string[] = [];
    // The broker closes the connection while four lanes publish one call after
    // another (retrying a failed call, as the schedule would), and they go on
    // for another 100 calls once it has.
    let closing: Promise<number> | undefined;
    let closed = false;
    let afterClose = 0;
    const lane = async () => {
      while (!closed || afterClose < 100) {
        const c = call();
        calls.push(c);
        if (closed) afterClose++;
        for (;;) {
          const result = await p.publish(c);
          if (result.outcome === "success") break;
          errors.push(result.error ?? "");
        }
        if (calls.length === 50 && !closing) {
          closing = closeRabbitConnections(name, "the test closes it");
          void closing.then(() => {
            closed = true;
          });
        }
      }
    };
    await Promise.all([lane(), lane(), lane(), lane()]);
    expect(await closing).toBe(1);
    // The broker confirms what it took before closing, so the calls in flight may all succeed;
    // any that failed name the cause.
    for (const error of errors) expect(error).toMatch(/^amqp: .*CONNECTION_FORCED/);
    // The publisher opened a new connection: the broker lists one under its name again.
    expect(await closeRabbitConnections(name, "the test ends")).toBe(1);

    // Every call arrived; a call in flight when the connection went may arrive twice, with the same message_id.
    const received = await consume(queue, calls.length);
    const seen = new Set(received.map((m) => m.properties.messageId));
    expect(calls.filter((c) => !seen.has(c.messageId))).toEqual([]);
  });

  test("a connection cut with publishes in flight fails them naming the cause; retried, they arrive", async () => {
    const { exchange, queue } = await declare("#");
    const target = new URL(testAmqpUrl);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5672) });
    try {
      const url = new URL(testAmqpUrl);
      url.port = String(proxy.port);
      const p = publisher({ exchange, url: url.href });
      const first = call();
      expect(await p.publish(first)).toEqual({ outcome: "success" });
      const calls = Array.from({ length: 100 }, () => call());
      const inFlight = calls.map((c) => p.publish(c));
      // Once the publishes are written, before the broker's confirms can come back.
      await new Promise((resolve) => setImmediate(resolve));
      proxy.down();
      const results = await Promise.all(inFlight);
      // Those the broker had not confirmed when the connection went (in practice all of them) fail naming it.
      const failed = results.filter((r) => r.outcome !== "success");
      expect(failed.length).toBeGreaterThan(0);
      for (const result of failed)
        expect(result).toMatchObject({ outcome: "retryable", error: expect.stringMatching(/^amqp: .*connection lost/) });
      proxy.up();
      // The retries, as the schedule would make them: the publisher opens a new connection.
      expect(await Promise.all(calls.map((c) => p.publish(c)))).toEqual(calls.map(() => ({ outcome: "success" })));
      // Some of the cut calls may have reached the broker before the cut: they arrive twice, with the same message_id.
      const seen = new Set<string>();
      const channel = await admin.createChannel();
      for (;;) {
        const message = await channel.get(queue, { noAck: true });
        if (!message) break;
        seen.add(message.properties.messageId);
      }
      await channel.close();
      expect([first, ...calls].filter((c) => !seen.has(c.messageId))).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  test("a connection that confirms nothing in time fails the attempt naming the timeout and is replaced", async () => {
    const { exchange } = await declare("#");
    // A proxy that can stop passing the broker's frames back, as a dead route does, without closing anything.
    const target = new URL(testAmqpUrl);
    let stalled = false;
    let connections = 0;
    const sockets = new Set<net.Socket>();
    const proxy = net.createServer((client) => {
      connections++;
      const upstream = net.connect(Number(target.port || 5672), target.hostname);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on("error", () => {});
      }
      client.on("data", (data) => upstream.write(data));
      upstream.on("data", (data) => {
        if (!stalled) client.write(data);
      });
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    try {
      const url = new URL(testAmqpUrl);
      url.port = String((proxy.address() as net.AddressInfo).port);
      const p = createAmqpPublisher({ url: url.href, exchange, routingKey: "{type}", mandatory: true, guard, timeoutMs: 3_000 });
      publishers.push(p);
      expect(await p.publish(call())).toEqual({ outcome: "success" });
      stalled = true;
      expect(await p.publish(call())).toEqual({ outcome: "retryable", error: "amqp: no confirm from the broker within 3000 ms" });
      stalled = false;
      expect(await p.publish(call())).toEqual({ outcome: "success" });
      expect(connections).toBe(2);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });

  test("close waits for the publishes in flight, then refuses new ones", async () => {
    const { exchange } = await declare("#");
    const p = createAmqpPublisher({ url: testAmqpUrl, exchange, routingKey: "{type}", mandatory: true, guard, timeoutMs });
    const inFlight = p.publish(call());
    await p.close();
    expect(await inFlight).toEqual({ outcome: "success" });
    expect(await p.publish(call())).toEqual({
      outcome: "retryable",
      error: "amqp: publisher closed (the destination changed or the process stops)",
    });
  });
});
