import { expect, test } from "vitest";
import { heldRounds } from "../../src/delivery/loop.js";

test("a process holds as many rounds of a destination's concurrency as fit in half a lease at the endpoint timeout", () => {
  expect(heldRounds(60_000, 5_000)).toBe(6); // the defaults: one round in flight, five waiting, 25 s < 30 s
  expect(heldRounds(60_000, 7_000)).toBe(4);
  // Never fewer than two (one in flight and one claimed ahead), never more than eight.
  expect(heldRounds(60_000, 60_000)).toBe(2);
  expect(heldRounds(3_600_000, 100)).toBe(8);
});
