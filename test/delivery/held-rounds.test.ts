import { expect, test } from "vitest";
import { heldPerDestination, heldRounds } from "../../src/delivery/held-rounds.js";

test("a process holds as many rounds of a destination's concurrency as fit in half a lease at the endpoint timeout", () => {
  expect(heldRounds(60_000, 5_000)).toBe(6); // the defaults: one round in flight, five waiting, 25 s < 30 s
  expect(heldRounds(60_000, 7_000)).toBe(4);
  // Never fewer than two (one in flight and one claimed ahead), never more than eight.
  expect(heldRounds(60_000, 60_000)).toBe(2);
  expect(heldRounds(3_600_000, 100)).toBe(8);
});

test("one destination never holds more than half the process's slots, nor less than one round", () => {
  const defaults = { perDestinationConcurrency: 64, concurrency: 1024, leaseMs: 60_000, timeoutMs: 5_000 };
  expect(heldPerDestination(defaults)).toBe(384); // six rounds of 64
  expect(heldPerDestination({ ...defaults, concurrency: 512 })).toBe(256); // half of 512
  expect(heldPerDestination({ ...defaults, concurrency: 100 })).toBe(64); // one round, though more than half
});
