import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { ROOT_CONTEXT, context, trace, TraceFlags } from "@opentelemetry/api";
import { randomBytes } from "node:crypto";
import { afterAll, expect } from "vitest";
import { Analytics } from "../../packages/client/src/index.js";
import { importReader, loadOpenTelemetryReader } from "../../packages/client/src/trace-context.js";
import { testWith } from "../helpers/fixtures.js";
import { memoryTransport } from "./support.js";

// The client reads the caller's active OpenTelemetry context, as an
// application with the OpenTelemetry SDK has it: a global context manager
// and a span made active around the call.
const contextManager = new AsyncLocalStorageContextManager();

const test = testWith();
test.beforeAll(async () => {
  context.setGlobalContextManager(contextManager.enable());
});
afterAll(async () => {
  context.disable();
});

function activeSpan() {
  const spanContext = { traceId: randomBytes(16).toString("hex"), spanId: randomBytes(8).toString("hex"), traceFlags: TraceFlags.SAMPLED };
  return { ctx: trace.setSpanContext(ROOT_CONTEXT, spanContext), traceparent: `00-${spanContext.traceId}-${spanContext.spanId}-01` };
}

/** A client over an in-memory server that records each Batch request's traceparent. */
function recordingClient(options: { traceparent?: (() => string | undefined) | false } = {}) {
  const seen: Array<string | null> = [];
  const analytics = new Analytics({
    writeKey: "wk",
    endpoint: "http://unused.invalid",
    ...options,
    transport: memoryTransport(async (req, ctx) => {
      seen.push(ctx.requestHeader.get("traceparent"));
      return { accepted: req.batch.length, rejected: [], rejectedCount: 0, messageIds: req.batch.map(() => "") };
    }),
  });
  return { analytics, seen };
}

test("a batch carries the traceparent of the context active at its first traced call; none without one", async () => {
  await loadOpenTelemetryReader();
  const { analytics, seen } = recordingClient();
  const span = activeSpan();
  analytics.track({ userId: "u", event: "outside" });
  context.with(span.ctx, () => analytics.track({ userId: "u", event: "inside" }));
  await analytics.flush();
  analytics.track({ userId: "u", event: "outside again" });
  await analytics.flush();
  await analytics.close();
  expect(seen).toEqual([span.traceparent, null]);
});

test("traceparent: false sends none; a function of the caller's own is used instead", async () => {
  await loadOpenTelemetryReader();
  const span = activeSpan();
  const off = recordingClient({ traceparent: false });
  context.with(span.ctx, () => off.analytics.track({ userId: "u", event: "E" }));
  await off.analytics.close();
  expect(off.seen).toEqual([null]);
  const own = recordingClient({ traceparent: () => "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" });
  own.analytics.track({ userId: "u", event: "E" });
  await own.analytics.close();
  expect(own.seen).toEqual(["00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"]);
});

test("without the OpenTelemetry API installed there is no reader, and no error", async () => {
  expect(await importReader("@opentelemetry/not-installed-here")).toBeUndefined();
});

test("end to end: the trace context of the call reaches the webhook receiver", async ({ server, receiver }) => {
  await loadOpenTelemetryReader();
  const source = await server.createSource();
  await server.createDestination({ name: "client trace", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
  const analytics = new Analytics({ writeKey: source.writeKey, endpoint: server.url });
  const span = activeSpan();
  context.with(span.ctx, () => analytics.track({ userId: "u", event: "Traced from the client" }));
  await analytics.close();
  const [request] = await receiver.waitForRequests(1);
  expect(request!.headers.traceparent).toBe(span.traceparent);
});
