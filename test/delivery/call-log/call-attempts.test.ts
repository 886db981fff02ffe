import { expect, test } from "vitest";
import type { LogAttemptRow } from "../../../src/db/call-log/log-advance.js";
import type { HeldAttempt } from "../../../src/db/call-log/log-cursors.js";
import { earlierTries, heldAfter, heldAttemptsOf, isSingle, withThisTry } from "../../../src/delivery/call-log/call-attempts.js";

const at = (s: number) => new Date(Date.UTC(2026, 11, 7, 10, 0, s));

function row(id: string, s: number, pks: string[]): LogAttemptRow {
  return {
    id,
    batchId: `batch-${id}`,
    urlIndex: 0,
    url: "https://example.com/hook",
    attemptedAt: at(s),
    outcome: "retryable",
    statusCode: 500,
    error: null,
    latencyMs: 5,
    responseBody: null,
    destinationRevision: 1,
    calls: pks.length,
    deliveries: pks.length,
    pks,
    discardedValues: 0,
  };
}

test("held tries are numbered per call, in the order made: a call sent in the second and third tries counts them 1 and 2", () => {
  // Try 1 carried calls 1 and 2, split (refused whole, then the half with 1); try 2 carried 1 and 3; try 3 carried 3.
  const first = heldAttemptsOf([], [row("a", 1, ["1", "2"]), row("b", 2, ["1"])]);
  const second = heldAttemptsOf(first, [row("c", 10, ["1", "3"])]);
  const third = heldAttemptsOf([...first, ...second], [row("d", 20, ["3"])]);
  const held: HeldAttempt[] = [...first, ...second, ...third];
  expect(held.map((h) => h.n)).toEqual([1, 1, 2, 3]);

  const tries = earlierTries(held);
  expect(tries.get("1")).toEqual({ rows: ["a", "b", "c"], numbers: [1, 1, 2], firstAt: at(1), tries: 2 });
  expect(tries.get("2")).toEqual({ rows: ["a"], numbers: [1], firstAt: at(1), tries: 1 });
  expect(tries.get("3")).toEqual({ rows: ["c", "d"], numbers: [1, 2], firstAt: at(10), tries: 2 });
  expect(tries.has("4")).toBe(false);

  // This try follows: numbered after the call's own tries, its first attempt still the first try's.
  const now = withThisTry(tries.get("3"), [row("e", 30, ["3"])]);
  expect(now).toEqual({ rows: ["c", "d", "e"], numbers: [1, 2, 3], firstAt: at(10), tries: 3 });
  expect(isSingle(now)).toBe(false);
  const fresh = withThisTry(undefined, [row("f", 30, ["4"])]);
  expect(fresh).toEqual({ rows: ["f"], numbers: [1], firstAt: at(30), tries: 1 });
  expect(isSingle(fresh)).toBe(true);
  expect(isSingle(withThisTry(undefined, [row("g", 30, ["4"]), row("h", 31, ["4"])]))).toBe(false);
});

test("a recorded page's calls leave the held attempts; an attempt of none of the rest goes, and none left is null", () => {
  const held = heldAttemptsOf([], [row("a", 1, ["1", "2"]), row("b", 2, ["3"])]);
  expect(heldAfter(held, new Set(["1"]))).toEqual([{ ...held[0]!, pks: ["2"] }, held[1]]);
  expect(heldAfter(held, new Set(["1", "2"]))).toEqual([held[1]]);
  expect(heldAfter(held, new Set(["1", "2", "3"]))).toBeNull();
});
