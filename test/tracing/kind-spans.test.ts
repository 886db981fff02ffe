import { randomUUID } from "node:crypto";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, test } from "vitest";
import { DestinationKind } from "../../gen/waypost/v1/destination_pb.js";
import { parseTraceparent } from "../../src/tracing/trace-context.js";
import { brokerAnswers, testNatsUrl } from "../helpers/brokers.js";
import { startOtlpCollector, type OtlpCollector } from "../helpers/otlp-collector.js";
import { completionsOf, startTestServer, type TestServer } from "../helpers/server.js";
import { newTraceparent, trackWith } from "./support.js";

// Every attempt of every kind is traced, not only webhook requests: a
// broker publish gets a client span, a child of the call's trace, and the
// message carries that span's traceparent so the consumer's spans are its children.
const natsUp = await brokerAnswers("nats", testNatsUrl);
const clientKind = 3;
let collector: OtlpCollector;
let server: TestServer;

beforeAll(async () => {
  collector = await startOtlpCollector();
  server = await startTestServer({ config: { tracing: { tracesUrl: collector.tracesUrl, protocol: "http/json" } } });
});
afterAll(async () => {
  await server?.stop();
  await collector?.close();
});

test.skipIf(!natsUp)("a NATS attempt has its publish span, and the message's traceparent is that span's", async () => {
  const id = randomUUID().slice(0, 8);
  const nc = await connect({ servers: new URL(testNatsUrl).host });
  const jsm = await jetstreamManager(nc);
  const stream = `WAYPOST_SPANS_${id}`;
  await jsm.streams.add({ name: stream, subjects: [`waypost-spans-${id}.>`] });
  try {
    const source = await server.createSource();
    const destination = await server.createDestination({
      name: `spans-${id}`,
      sourceIds: [source.id],
      kind: DestinationKind.NATS,
      nats: { servers: [testNatsUrl], subject: `waypost-spans-${id}.{type}` },
    });
    const incoming = newTraceparent();
    const done = completionsOf(server, destination.id, 1);
    await trackWith(server, "connect", source.writeKey, { traceparent: incoming.traceparent });
    expect((await done).map((c) => c.status)).toEqual(["delivered"]);

    await server.waypost.tracing.flush();
    const spans = await collector.waitForSpans(1, (s) => s.traceId === incoming.traceId && s.name === "publish");
    const publish = spans.find((s) => s.name === "publish")!;
    expect(publish.kind).toBe(clientKind);
    expect(publish.attributes).toMatchObject({
      "messaging.system": "nats",
      "waypost.destination.id": destination.id,
      "waypost.attempt.outcome": "success",
    });
    const message = await jsm.streams.getMessage(stream, { seq: 1 });
    const sent = parseTraceparent(message!.header.get("traceparent"));
    expect(sent?.traceId).toBe(incoming.traceId);
    expect(sent?.parentId).toBe(publish.spanId);
  } finally {
    await jsm.streams.delete(stream);
    await nc.close();
  }
});
