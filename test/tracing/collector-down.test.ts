import { afterEach, expect, test } from "vitest";
import { startOtlpCollector, type OtlpCollector } from "../helpers/otlp-collector.js";
import type { Receiver } from "../helpers/receiver.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { newTraceparent, setupRoute, trackWith } from "./support.js";

// Spans leave in the background: a collector that never answers, or
// refuses every export, changes nothing for ingest and delivery.
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  // The collector first: a hanging export ends when its connection does, so stopping does not wait for it.
  for (const item of open.splice(0).reverse()) await item.close();
});

async function tracedServer(collector: OtlpCollector): Promise<TestServer> {
  // Stopping gives the exporter up to the shutdown timeout: keep it short, the collector is down.
  const server = await startTestServer({
    config: { tracing: { tracesUrl: collector.tracesUrl, protocol: "http/protobuf" }, delivery: { shutdownTimeoutMs: 500 } },
  });
  open.push({ close: () => server.stop() });
  open.push(collector);
  return server;
}

function track(server: TestServer, writeKey: string) {
  return trackWith(server, "connect", writeKey, { traceparent: newTraceparent().traceparent });
}

test("while the collector holds an export unanswered, calls are accepted and delivered", async () => {
  const collector = await startOtlpCollector("hang");
  const server = await tracedServer(collector);
  const { receiver, source } = await setupRoute(server);
  open.push(receiver as Receiver);
  const first = server.waitForDeliveries(1);
  await track(server, source.writeKey);
  await first;
  // Export what there is: the collector takes the request and never answers.
  // Not awaited: it ends only when the export does (given up once the collector is gone).
  void server.waypost.tracing.flush().catch(() => {});
  await collector.waitForRequests(1);
  const count = 20;
  const delivered = server.waitForDeliveries(count);
  for (let i = 0; i < count; i++) await track(server, source.writeKey);
  expect(await delivered).toHaveLength(count);
  await receiver.waitForRequests(count + 1);
  expect(collector.answered).toBe(0);
});

test("spans a collector refuses are counted as dropped, and delivery goes on", async () => {
  const collector = await startOtlpCollector("refuse");
  const server = await tracedServer(collector);
  const { receiver, source } = await setupRoute(server);
  open.push(receiver as Receiver);
  const delivered = server.waitForDeliveries(1);
  await track(server, source.writeKey);
  expect((await delivered)[0]!.status).toBe("delivered");
  await server.waypost.tracing.flush().catch(() => {});
  expect(collector.answered).toBeGreaterThanOrEqual(1);
  const metric = await server.waypost.metrics.traceSpansDropped.get();
  const dropped = metric.values.filter((v) => v.labels.reason === "export_failed").reduce((sum, v) => sum + v.value, 0);
  // The request's server span and the attempt's client span.
  expect(dropped).toBe(2);
});
