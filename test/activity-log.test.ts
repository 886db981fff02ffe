import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createActivityLog } from "../src/activity-log.js";
import type { DeliveryCompletion } from "../src/db/job-table/index.js";
import { createLogger } from "../src/logger.js";
import { createMetrics } from "../src/metrics.js";
import { startReceiver, type Receiver } from "./helpers/receiver.js";
import { ManualClock, startTestServer, type TestServer } from "./helpers/server.js";

/** A log stream whose JSON lines can be awaited by message. */
function capturedLog() {
  const stream = new PassThrough();
  const lines: Array<Record<string, any>> = [];
  const waiters: Array<{ msg: string; resolve: (line: Record<string, any>) => void }> = [];
  let partial = "";
  stream.on("data", (chunk: Buffer) => {
    partial += chunk.toString();
    const parts = partial.split("\n");
    partial = parts.pop()!;
    for (const text of parts.filter(Boolean)) {
      const line = JSON.parse(text) as Record<string, any>;
      lines.push(line);
      for (const waiter of waiters.filter((w) => w.msg === line.msg)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  });
  return {
    stream,
    lines,
    next(msg: string) {
      return new Promise<Record<string, any>>((resolve) => waiters.push({ msg, resolve }));
    },
  };
}

const completion = (destinationId: string, status: DeliveryCompletion["status"], id = "1"): DeliveryCompletion => ({
  destinationId,
  id,
  leaseToken: 1,
  status,
  runAt: new Date(),
  attempted: true,
  attemptedAt: new Date(),
  retryUrls: null,
  attempts: [
    {
      urlIndex: 0,
      url: "https://hooks.example.com/?token=secret",
      attemptedAt: new Date(),
      outcome: "http_error" as never,
      statusCode: status === "delivered" ? 200 : 410,
      error: null,
      latencyMs: 3,
      responseBody: null,
    },
  ],
});

describe("createActivityLog", () => {
  test("summarises calls and deliveries per destination, by name, only when something happened", async () => {
    const log = capturedLog();
    const metrics = createMetrics();
    metrics.callsAccepted.inc({ type: "track" }, 5); // before the log began: not counted
    const activity = createActivityLog({
      logger: createLogger("info", log.stream),
      metrics,
      clock: new ManualClock(),
      intervalMs: 0,
      // d2 was deleted meanwhile: no name.
      destinationNames: async (ids) => new Map([["d1", "hooks"]].filter(([id]) => ids.includes(id!)) as Array<[string, string]>),
    });
    await activity.flush();
    expect(log.lines).toHaveLength(0);
    metrics.callsAccepted.inc({ type: "track" }, 3);
    metrics.callsAccepted.inc({ type: "identify" }, 1);
    const untried = { ...completion("d1", "retrying"), attempted: false, attempts: [] };
    activity.completed([
      completion("d1", "delivered"),
      completion("d1", "delivered"),
      completion("d2", "expired"),
      completion("d1", "retrying"),
      completion("d1", "retrying"),
      untried,
    ]);
    const summary = log.next("activity since the last summary");
    await activity.flush();
    expect(await summary).toMatchObject({
      level: 30,
      callsAccepted: 4,
      deliveries: {
        d1: { name: "hooks", delivered: 2, failed: 0, expired: 0, retryableFailures: 2 },
        d2: { name: null, delivered: 0, failed: 0, expired: 1, retryableFailures: 0 },
      },
    });
    const count = log.lines.length;
    await activity.flush();
    expect(log.lines).toHaveLength(count);
  });

  test("each destination's permanent failure is logged once per interval; the rest are counted", async () => {
    const log = capturedLog();
    const clock = new ManualClock();
    const activity = createActivityLog({
      logger: createLogger("info", log.stream),
      metrics: createMetrics(),
      clock,
      intervalMs: 0,
      failureLogIntervalMs: 60_000,
    });
    activity.completed([completion("d1", "failed", "a"), completion("d1", "failed", "b"), completion("d2", "failed", "c")]);
    clock.advance(61_000);
    activity.completed([completion("d1", "expired", "d")]);
    await new Promise((resolve) => setImmediate(resolve));
    const warnings = log.lines.filter((line) => line.level === 40);
    expect(warnings.map((line) => [line.destinationId, line.deliveryId])).toEqual([
      ["d1", "a"],
      ["d2", "c"],
      ["d1", "d"],
    ]);
    expect(warnings[0]).toMatchObject({ status: "failed", lastStatusCode: 410 });
    expect(JSON.stringify(log.lines)).not.toContain("secret");
    const summary = log.next("activity since the last summary");
    await activity.flush();
    expect((await summary).unreportedPermanentFailures).toBe(1);
  });

  test("a destination that only fails retryably is in the summary; no permanent-failure warning for it", async () => {
    const log = capturedLog();
    const activity = createActivityLog({
      logger: createLogger("info", log.stream),
      metrics: createMetrics(),
      clock: new ManualClock(),
      intervalMs: 0,
      destinationNames: async () => {
        throw new Error("database gone");
      },
    });
    activity.completed([completion("d1", "retrying", "a"), completion("d1", "retrying", "b")]);
    const summary = log.next("activity since the last summary");
    await activity.flush();
    // The names could not be read: the counts are logged without them.
    expect((await summary).deliveries).toEqual({ d1: { name: null, delivered: 0, failed: 0, expired: 0, retryableFailures: 2 } });
    expect(log.lines.filter((line) => line.level === 40)).toEqual([]);
  });
});

describe("in the service", () => {
  let server: TestServer;
  let receiver: Receiver;
  let unavailable: Receiver;
  const log = capturedLog();

  beforeAll(async () => {
    receiver = await startReceiver({ respond: () => ({ status: 410, body: "gone" }) });
    unavailable = await startReceiver({ respond: () => ({ status: 503, body: "down for maintenance" }) });
    server = await startTestServer({ logStream: log.stream, config: { summaryIntervalMs: 300 } });
  });
  afterAll(async () => {
    await server?.stop();
    await receiver?.close();
    await unavailable?.close();
  });

  test("a permanent failure is logged and the periodic summary counts calls and failures, naming the destinations", async () => {
    const source = await server.createSource();
    const destination = await server.createDestination({ name: "gone", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
    const down = await server.createDestination({ name: "down", sourceIds: [source.id], webhooks: [{ url: unavailable.url }] });
    const failure = log.next("a delivery failed for good: its destination refused it");
    const summaries: Array<Record<string, any>> = [];
    const summaryWithFailure = new Promise<Record<string, any>>((resolve) => {
      const wait = () =>
        void log.next("activity since the last summary").then((line) => {
          summaries.push(line);
          const seen = (id: string, count: string) => summaries.some((s) => s.deliveries?.[id]?.[count]);
          if (seen(destination.id, "failed") && seen(down.id, "retryableFailures")) resolve(line);
          else wait();
        });
      wait();
    });
    await server.tracking(source.writeKey).track({ track: { userId: "u", event: "Gone" } });
    expect(await failure).toMatchObject({ level: 40, destinationId: destination.id, lastStatusCode: 410 });
    await summaryWithFailure;
    expect(summaries.reduce((sum, line) => sum + line.callsAccepted, 0)).toBe(1);
    const counts = (id: string) => summaries.map((line) => line.deliveries?.[id]).filter(Boolean);
    expect(counts(destination.id).every((c) => c.name === "gone")).toBe(true);
    expect(counts(down.id)).toEqual([{ name: "down", delivered: 0, failed: 0, expired: 0, retryableFailures: 1 }]);
    // A retryable failure is no cause for the permanent-failure warning.
    expect(log.lines.filter((line) => line.level === 40 && line.destinationId === down.id)).toEqual([]);
  });

  test("process metrics are named waypost_process_* and waypost_nodejs_*", async () => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(text).toContain("waypost_process_cpu_user_seconds_total");
    expect(text).toContain("waypost_nodejs_heap_size_total_bytes");
    expect(text).not.toContain("waypost_process_process_");
  });
});
