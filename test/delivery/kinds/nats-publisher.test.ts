import { randomUUID } from "node:crypto";
import { type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { BrokerCall, BrokerPublisher } from "../../../src/delivery/kinds/broker-publisher.js";
import { createNatsPublisher } from "../../../src/delivery/kinds/nats/nats-publisher.js";
import { createAddressGuard } from "../../../src/outbound/address-guard.js";
import { brokerAnswers, startOwnNatsServer, testNatsUrl } from "../../helpers/brokers.js";
import { startTcpProxy } from "../../helpers/tcp-proxy.js";

const available = await brokerAnswers("nats", testNatsUrl);
// The server is on loopback: the operator's allowance, as in a deployment next to its broker.
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

describe.skipIf(!available)("NATS JetStream publisher", () => {
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const streams: string[] = [];
  const publishers: BrokerPublisher[] = [];

  beforeAll(async () => {
    nc = await connect({ servers: new URL(testNatsUrl).host });
    jsm = await jetstreamManager(nc);
  });
  afterAll(async () => {
    await Promise.all(publishers.map((p) => p.close()));
    for (const stream of streams) await jsm?.streams.delete(stream).catch(() => {});
    await nc?.close();
  });

  /** A stream over `<prefix>.>`, unique to the test. */
  async function stream(duplicateWindowMs = 60_000): Promise<{ name: string; prefix: string }> {
    const id = randomUUID().slice(0, 8);
    const name = `WAYPOST_TEST_${id}`;
    const prefix = `waypost-test-${id}`;
    await jsm.streams.add({ name, subjects: [`${prefix}.>`], duplicate_window: duplicateWindowMs * 1_000_000 });
    streams.push(name);
    return { name, prefix };
  }

  function publisher(subject: string, servers = [testNatsUrl]) {
    const p = createNatsPublisher({ servers, subject, token: "", user: "", password: "", guard, timeoutMs });
    publishers.push(p);
    return p;
  }

  async function storedMessages(name: string) {
    const info = await jsm.streams.info(name);
    const messages = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      messages.push(await jsm.streams.getMessage(name, { seq }));
    }
    return messages;
  }

  test("a stream on the subject receives every call with Nats-Msg-Id and traceparent; the subject renders {type} and {event}", async () => {
    const { name, prefix } = await stream();
    const p = publisher(`${prefix}.{type}.{event}`);
    const calls = Array.from({ length: 40 }, (_, i) =>
      call({
        type: i % 4 === 0 ? "identify" : "track",
        event: i % 4 === 0 ? undefined : "Order Completed",
        traceparent: `00-${"a".repeat(30)}${String(i).padStart(2, "0")}-${"b".repeat(16)}-01`,
        tracestate: "vendor=1",
      }),
    );
    const results = await Promise.all(calls.map((c) => p.publish(c)));
    expect(results).toEqual(calls.map(() => ({ outcome: "success" })));

    const stored = await storedMessages(name);
    expect(stored).toHaveLength(calls.length);
    for (const message of stored) {
      const id = message!.header.get("Nats-Msg-Id");
      const sent = calls.find((c) => c.messageId === id)!;
      expect(sent, id).toBeDefined();
      expect(message!.subject).toBe(sent.type === "identify" ? `${prefix}.identify._` : `${prefix}.track.order_completed`);
      expect(message!.string()).toBe(sent.body);
      expect(message!.header.get("traceparent")).toBe(sent.traceparent);
      expect(message!.header.get("tracestate")).toBe("vendor=1");
    }
  });

  test("a resend inside the duplicate window is delivered and dropped by the stream", async () => {
    const { name, prefix } = await stream();
    const p = publisher(`${prefix}.{type}`);
    const c = call();
    expect(await p.publish(c)).toEqual({ outcome: "success" });
    expect(await p.publish(c)).toEqual({ outcome: "success" });
    expect(await p.publish(call())).toEqual({ outcome: "success" });
    expect((await jsm.streams.info(name)).state.messages).toBe(2);
  });

  test("no stream for the subject fails the attempt naming the subject", async () => {
    const prefix = `waypost-test-nostream-${randomUUID().slice(0, 8)}`;
    const result = await publisher(`${prefix}.{type}`).publish(call());
    expect(result).toEqual({ outcome: "retryable", error: `nats: no stream matches subject "${prefix}.track" (no responders)` });
  });

  test("a server the address guard refuses is never contacted", async () => {
    const strict = createAddressGuard({ allowPrivate: false, allowedCidrs: [] });
    const p = createNatsPublisher({
      servers: [testNatsUrl],
      subject: "x.{type}",
      token: "",
      user: "",
      password: "",
      guard: strict,
      timeoutMs,
    });
    publishers.push(p);
    const result = await p.publish(call());
    expect(result.outcome).toBe("retryable");
    expect(result.error).toMatch(/^nats: cannot connect to .*refused: .*WAYPOST_ALLOW_PRIVATE_DESTINATIONS/);
  });

  test("a lost connection fails the attempt naming it; the next publish reconnects and no call is lost", async () => {
    const { name, prefix } = await stream();
    const target = new URL(testNatsUrl);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 4222) });
    try {
      const p = publisher(`${prefix}.{type}`, [`nats://127.0.0.1:${proxy.port}`]);
      const first = call();
      expect(await p.publish(first)).toEqual({ outcome: "success" });
      const calls = Array.from({ length: 50 }, () => call());
      const inFlight = calls.map((c) => p.publish(c));
      await new Promise((resolve) => setImmediate(resolve));
      proxy.down();
      const results = await Promise.all(inFlight);
      const failed = results.filter((r) => r.outcome !== "success");
      expect(failed.length).toBeGreaterThan(0);
      for (const result of failed) expect(result.error).toMatch(/^nats: (connection lost|cannot connect)/);
      // While the server is unreachable, attempts fail naming the cause.
      const down = await p.publish(calls[0]!);
      expect(down.outcome).toBe("retryable");
      expect(down.error).toMatch(/^nats: cannot connect to .*127\.0\.0\.1/);
      proxy.up();
      // The retries, as the schedule would make them; the stream drops the ones it already had.
      expect(await Promise.all(calls.map((c) => p.publish(c)))).toEqual(calls.map(() => ({ outcome: "success" })));
      const ids = (await storedMessages(name)).map((m) => m!.header.get("Nats-Msg-Id"));
      expect(ids.sort()).toEqual([first, ...calls].map((c) => c.messageId).sort());
    } finally {
      await proxy.close();
    }
  });

  test("a token the server refuses fails naming the cause, never the token; the right one connects", async () => {
    const server = await startOwnNatsServer(["--auth", "the-right-token"]);
    try {
      const withToken = (token: string) => {
        const p = createNatsPublisher({ servers: [server.url], subject: "x.{type}", token, user: "", password: "", guard, timeoutMs });
        publishers.push(p);
        return p;
      };
      const refused = await withToken("wrong-token-xyz").publish(call());
      expect(refused).toEqual({ outcome: "retryable", error: `nats: cannot connect to ${server.url}: Authorization Violation` });
      // This server runs without JetStream: connected, the publish finds no stream.
      const connected = await withToken("the-right-token").publish(call());
      expect(connected).toEqual({ outcome: "retryable", error: 'nats: no stream matches subject "x.track" (no responders)' });
    } finally {
      await server.stop();
    }
  });
});
