import { expect, test } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import { createPublishRounds } from "../../../src/delivery/kinds/publish-rounds.js";

// A broker kind's publishes started in one event-loop turn for one target
// are one batch operation: one batch (same id, its call count), one start
// time and one latency for all, each call keeping its own outcome.
test("publishes started in one turn share a batch; each keeps its value; the next turn opens another round", async () => {
  const clock = new ManualClock(new Date("2026-11-28T10:00:00Z"));
  const rounds = createPublishRounds(clock);
  let confirm!: () => void;
  const confirmed = new Promise<string>((resolve) => {
    confirm = () => resolve("late ok");
  });
  const first = [
    rounds.publish("d1", () => Promise.resolve("ok")),
    rounds.publish("d1", () => Promise.resolve("nack")),
    rounds.publish("d1", () => confirmed),
    rounds.publish("d2", () => Promise.resolve("other target")),
  ];
  clock.advance(5_000);
  confirm();
  const results = await Promise.all(first);
  expect(results.map((r) => r.value)).toEqual(["ok", "nack", "late ok", "other target"]);
  const [a, b, c, d] = results;
  expect(a!.batch).toBe(b!.batch);
  expect(a!.batch).toBe(c!.batch);
  expect(a!.batch.calls).toBe(3);
  expect(d!.batch.id).not.toBe(a!.batch.id);
  expect(d!.batch.calls).toBe(1);
  expect(new Set(results.slice(0, 3).map((r) => r.latencyMs)).size).toBe(1);
  expect(a!.attemptedAt).toEqual(new Date("2026-11-28T10:00:00Z"));

  const next = await rounds.publish("d1", () => Promise.resolve("ok"));
  expect(next.batch.id).not.toBe(a!.batch.id);
  expect(next.batch.calls).toBe(1);
  expect(next.attemptedAt).toEqual(new Date("2026-11-28T10:00:05Z"));
});
