import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { ManualClock } from "../../src/clock.js";
import { parseTraceparent } from "../../src/tracing/trace-context.js";
import { startOtlpCollector, type CollectedSpan, type OtlpCollector } from "../helpers/otlp-collector.js";
import type { Receiver } from "../helpers/receiver.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { newTraceparent, protocols, setupRoute, trackWith } from "./support.js";

// Tracing on: spans exported to a real OTLP/HTTP endpoint on loopback.
const serverKind = 2;
const clientKind = 3;
let clock: ManualClock;
let collector: OtlpCollector;
let server: TestServer;
const receivers: Receiver[] = [];

beforeAll(async () => {
  clock = new ManualClock(new Date("2026-11-25T10:00:00Z"));
  collector = await startOtlpCollector();
  server = await startTestServer({ clock, config: { tracing: { tracesUrl: collector.tracesUrl, protocol: "http/json" } } });
});
afterAll(async () => {
  await server?.stop();
  await collector?.close();
});
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
  await server.waypost.delivery!.settle();
});

async function route(respond?: Parameters<typeof setupRoute>[1]) {
  const routed = await setupRoute(server, respond);
  receivers.push(routed.receiver);
  return routed;
}

/** The spans of one trace, once the server and `attempts` client spans of it are exported. */
async function traceOf(traceId: string, attempts = 1) {
  await server.waypost.tracing.flush();
  const spans = await collector.waitForSpans(1 + attempts, (s) => s.traceId === traceId);
  const serverSpans = spans.filter((s) => s.kind === serverKind);
  const clientSpans = spans.filter((s) => s.kind === clientKind);
  expect(serverSpans).toHaveLength(1);
  expect(clientSpans).toHaveLength(attempts);
  return { serverSpan: serverSpans[0]!, clientSpans };
}

function sentParent(request: { headers: Record<string, unknown> }) {
  const parsed = parseTraceparent(request.headers.traceparent as string);
  expect(parsed).toBeDefined();
  return parsed!;
}

describe.each(protocols)("over %s", (protocol) => {
  test("the receiver's traceparent continues the caller's trace, its parent the attempt's span, a child of the request's span", async () => {
    const { receiver, source, destination } = await route();
    const incoming = newTraceparent();
    const delivered = server.waitForDeliveries(1);
    const messageId = await trackWith(server, protocol, source.writeKey, { traceparent: incoming.traceparent, tracestate: "vendor=1" });
    const [request] = await receiver.waitForRequests(1);
    await delivered;
    const sent = sentParent(request!);
    expect(sent.traceId).toBe(incoming.traceId);
    expect(request!.headers.tracestate).toBe("vendor=1");

    const { serverSpan, clientSpans } = await traceOf(incoming.traceId);
    const attempt = clientSpans[0]!;
    expect(sent.parentId).toBe(attempt.spanId);
    expect(attempt.parentSpanId).toBe(serverSpan.spanId);
    expect(serverSpan.parentSpanId).toBe(incoming.parentId);
    expect(serverSpan.serviceName).toBe("waypost");
    expect(serverSpan.attributes).toMatchObject({
      "waypost.source.id": source.id,
      "waypost.calls.accepted": 1,
      "waypost.calls.rejected": 0,
    });
    expect(attempt.name).toBe("POST");
    expect(attempt.attributes).toMatchObject({
      "http.request.method": "POST",
      "server.address": "127.0.0.1",
      "http.response.status_code": 200,
      "waypost.destination.id": destination.id,
      "waypost.destination.name": "traced hook",
      "waypost.message.id": messageId,
      "waypost.attempt.number": 1,
      "waypost.attempt.outcome": "success",
    });
  });
});

test("a call without a traceparent starts a trace at its request's span, and the receiver joins it", async () => {
  const { receiver, source } = await route();
  const delivered = server.waitForDeliveries(1);
  const messageId = await trackWith(server, "connect", source.writeKey, {});
  const [request] = await receiver.waitForRequests(1);
  await delivered;
  const sent = sentParent(request!);
  const { serverSpan, clientSpans } = await traceOf(sent.traceId);
  expect(serverSpan.parentSpanId).toBe("");
  expect(clientSpans[0]!.spanId).toBe(sent.parentId);
  expect(clientSpans[0]!.parentSpanId).toBe(serverSpan.spanId);
  // What is stored is the request span's context.
  const { rows } = await server.pool.query("SELECT traceparent FROM messages WHERE message_id = $1", [messageId]);
  expect(rows[0].traceparent).toBe(`00-${sent.traceId}-${serverSpan.spanId}-01`);
});

describe.each(protocols)("over %s", (protocol) => {
  test.each([
    ["an all-zero trace id", `00-${"0".repeat(32)}-${"a".repeat(16)}-01`],
    ["an all-zero parent id", `00-${"b".repeat(32)}-${"0".repeat(16)}-01`],
  ])("a call whose traceparent has %s starts a new trace, and the receiver gets its traceparent", async (_, invalid) => {
    const { receiver, source } = await route();
    const delivered = server.waitForDeliveries(1);
    const messageId = await trackWith(server, protocol, source.writeKey, { traceparent: invalid, tracestate: "vendor=1" });
    const [request] = await receiver.waitForRequests(1);
    await delivered;
    const sent = sentParent(request!);
    expect(sent.traceId).not.toBe("0".repeat(32));
    expect(sent.traceId).not.toBe("b".repeat(32));
    // The tracestate went with the refused traceparent.
    expect(request!.headers.tracestate).toBeUndefined();
    const { serverSpan, clientSpans } = await traceOf(sent.traceId);
    expect(serverSpan.parentSpanId).toBe("");
    expect(clientSpans[0]!.spanId).toBe(sent.parentId);
    const { rows } = await server.pool.query("SELECT traceparent FROM messages WHERE message_id = $1", [messageId]);
    expect(rows[0].traceparent).toBe(`00-${sent.traceId}-${serverSpan.spanId}-01`);
  });
});

test("a retried delivery has a span per attempt, each the parent of its own request's traceparent", async () => {
  const { receiver, source } = await route((_, index) => ({ status: index === 0 ? 503 : 200 }));
  const incoming = newTraceparent();
  const retrying = server.waitForDeliveries(1, ["retrying"]);
  const messageId = await trackWith(server, "v1", source.writeKey, { traceparent: incoming.traceparent });
  await retrying;
  const { rows } = await server.pool.query(
    "SELECT d.run_at FROM deliveries d JOIN messages m ON m.id = d.message_pk WHERE m.message_id = $1",
    [messageId],
  );
  clock.set(rows[0].run_at);
  const delivered = server.waitForDeliveries(1, ["delivered"]);
  server.waypost.delivery!.poke();
  await delivered;
  const requests = await receiver.waitForRequests(2);
  const { serverSpan, clientSpans } = await traceOf(incoming.traceId, 2);
  const byNumber = (n: number) => clientSpans.find((s) => s.attributes["waypost.attempt.number"] === n)!;
  const [first, second] = [byNumber(1), byNumber(2)];
  expect(first.attributes).toMatchObject({ "waypost.attempt.outcome": "retryable", "http.response.status_code": 503, "error.type": "503" });
  expect(first.statusCode).toBe(2);
  expect(second.attributes).toMatchObject({ "waypost.attempt.outcome": "success", "http.response.status_code": 200 });
  for (const span of [first, second]) expect(span.parentSpanId).toBe(serverSpan.spanId);
  expect(requests.map((r) => sentParent(r).parentId)).toEqual([first.spanId, second.spanId]);
  expect(requests.map((r) => sentParent(r).traceId)).toEqual([incoming.traceId, incoming.traceId]);
});

test("a refused request's span is marked failed", async () => {
  const incoming = newTraceparent();
  const response = await fetch(`${server.url}/v1/track`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Basic ${Buffer.from("no-such-key:").toString("base64")}`,
      traceparent: incoming.traceparent,
    },
    body: JSON.stringify({ userId: "u", event: "E" }),
  });
  expect(response.status).toBe(401);
  await server.waypost.tracing.flush();
  const [span] = (await collector.waitForSpans(1, (s) => s.traceId === incoming.traceId)) as [CollectedSpan];
  expect(span.kind).toBe(serverKind);
  expect(span.statusCode).toBe(2);
  expect(span.attributes["http.response.status_code"]).toBe(401);
});

test("the protobuf encoding (the default) carries the same spans", async () => {
  const protobufCollector = await startOtlpCollector();
  const other = await startTestServer({ config: { tracing: { tracesUrl: protobufCollector.tracesUrl, protocol: "http/protobuf" } } });
  try {
    const { receiver, source, destination } = await setupRoute(other);
    receivers.push(receiver);
    const incoming = newTraceparent();
    const delivered = other.waitForDeliveries(1);
    await trackWith(other, "grpc", source.writeKey, { traceparent: incoming.traceparent });
    const [request] = await receiver.waitForRequests(1);
    await delivered;
    await other.waypost.tracing.flush();
    const spans = await protobufCollector.waitForSpans(2, (s) => s.traceId === incoming.traceId);
    expect([...protobufCollector.contentTypes]).toEqual(["application/x-protobuf"]);
    const serverSpan = spans.find((s) => s.kind === serverKind)!;
    const attempt = spans.find((s) => s.kind === clientKind)!;
    expect(serverSpan.parentSpanId).toBe(incoming.parentId);
    expect(serverSpan.serviceName).toBe("waypost");
    expect(attempt.parentSpanId).toBe(serverSpan.spanId);
    expect(sentParent(request!)).toMatchObject({ traceId: incoming.traceId, parentId: attempt.spanId });
    expect(attempt.attributes).toMatchObject({
      "waypost.destination.id": destination.id,
      "waypost.attempt.number": 1,
      "http.response.status_code": 200,
    });
  } finally {
    await other.stop();
    await protobufCollector.close();
  }
});
