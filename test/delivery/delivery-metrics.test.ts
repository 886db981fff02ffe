import { expect, test } from "vitest";
import type { AttemptResult } from "../../src/outbound/send.js";
import { createDeliveryMetrics } from "../../src/delivery/delivery-metrics.js";
import { createMetrics } from "../../src/metrics.js";

const a = "00000000-0000-4000-8000-00000000000a";
const b = "00000000-0000-4000-8000-00000000000b";
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

function attempt(outcome: AttemptResult["outcome"], latencyMs: number): AttemptResult {
  return {
    urlIndex: 0,
    url: "https://example.com/hook",
    attemptedAt: new Date(),
    outcome,
    statusCode: null,
    error: null,
    latencyMs,
    responseBody: null,
  };
}

function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

test("counts handed over in bulk equal the attempts and results, per destination and label, over several turns", async () => {
  const metrics = createMetrics();
  const recorder = createDeliveryMetrics(metrics);
  for (let turn = 0; turn < 3; turn++) {
    for (let i = 0; i < 100; i++) {
      recorder.attempted(a, [attempt("success", 3)]);
      recorder.finished(a, "delivered");
    }
    recorder.attempted(b, [attempt("retryable", 40), attempt("abandoned", 7)]);
    recorder.finished(b, "retrying");
    await nextTurn();
  }
  const text = await metrics.registry.metrics();
  expect(sample(text, "waypost_delivery_attempts_total", `destination_id="${a}",outcome="success"`)).toBe(300);
  expect(sample(text, "waypost_delivery_attempts_total", `destination_id="${b}",outcome="retryable"`)).toBe(3);
  expect(sample(text, "waypost_delivery_attempts_total", `destination_id="${b}",outcome="abandoned"`)).toBe(3);
  expect(sample(text, "waypost_deliveries_total", `destination_id="${a}",status="delivered"`)).toBe(300);
  expect(sample(text, "waypost_deliveries_total", `destination_id="${b}",status="retrying"`)).toBe(3);
  // Abandoned requests have no latency worth recording.
  expect(sample(text, "waypost_delivery_attempt_duration_seconds_count", `destination_id="${b}"`)).toBe(3);
  expect(sample(text, "waypost_delivery_attempt_duration_seconds_bucket", `le="0.005",destination_id="${a}"`)).toBe(300);
  expect(sample(text, "waypost_delivery_attempt_duration_seconds_bucket", `le="0.025",destination_id="${b}"`)).toBe(0);
  expect(sample(text, "waypost_delivery_attempt_duration_seconds_bucket", `le="0.05",destination_id="${b}"`)).toBe(3);
});

test("a count reaches prom-client within the event-loop turn after it was made, not before", async () => {
  const metrics = createMetrics();
  const recorder = createDeliveryMetrics(metrics);
  recorder.attempted(a, [attempt("permanent", 12)]);
  const before = await metrics.attempts.get();
  expect(before.values.find((v) => v.labels.outcome === "permanent")?.value ?? 0).toBe(0);
  await nextTurn();
  const after = await metrics.attempts.get();
  expect(after.values.find((v) => v.labels.outcome === "permanent" && v.labels.destination_id === a)?.value).toBe(1);
});

test("in flight goes up and down at once", async () => {
  const metrics = createMetrics();
  const recorder = createDeliveryMetrics(metrics);
  recorder.inFlight(1);
  recorder.inFlight(1);
  recorder.inFlight(-1);
  expect((await metrics.deliveriesInFlight.get()).values[0]?.value).toBe(1);
});
