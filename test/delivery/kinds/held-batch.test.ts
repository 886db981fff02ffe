import { expect, test } from "vitest";
import { ManualClock } from "../../../src/clock.js";
import { createHeldBatches, type HeldCall } from "../../../src/delivery/kinds/held-batch.js";

/** A holder whose sends are written down as "context: items" and resolve each call with that; a send settles when `settle()` is called (or at once). */
function setup(
  options: { framing?: { around: number; between: number }; sameContext?: (a: string, b: string) => boolean; atOnce?: boolean } = {},
) {
  const clock = new ManualClock(new Date("2026-12-06T10:00:00Z"));
  const sent: string[] = [];
  const waiting: Array<() => void> = [];
  const held = createHeldBatches<string, string, string>({
    clock,
    framing: options.framing,
    sameContext: options.sameContext,
    send(context: string, calls: Array<HeldCall<string, string>>) {
      const batch = `${context}: ${calls.map((c) => c.item).join(",")}`;
      sent.push(batch);
      if (options.atOnce) {
        for (const call of calls) call.resolve(batch);
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => {
        waiting.push(() => {
          for (const call of calls) call.resolve(batch);
          resolve();
        });
      });
    },
  });
  const settle = () => {
    for (const done of waiting.splice(0)) done();
  };
  return { clock, held, sent, settle };
}

const limits = { maxCalls: 3, maxWaitMs: 1_000 };

test("a batch goes once full; the rest waits until its first call has waited maxWaitMs, by the clock on tick", async () => {
  const { clock, held, sent, settle } = setup();
  const results = ["a", "b", "c", "d"].map((item) => held.add("k", "r1", limits, item));
  expect(sent).toEqual(["r1: a,b,c"]);
  expect(held.holds("k")).toBe(true);
  clock.advance(999);
  held.tick();
  expect(sent).toEqual(["r1: a,b,c"]);
  clock.advance(1);
  held.tick();
  expect(sent).toEqual(["r1: a,b,c", "r1: d"]);
  expect(held.holds("k")).toBe(false);
  settle();
  expect(await Promise.all(results)).toEqual(["r1: a,b,c", "r1: a,b,c", "r1: a,b,c", "r1: d"]);
});

test("keys are held apart, each with its own limits", () => {
  const { clock, held, sent } = setup();
  void held.add("one", "r1", { maxCalls: 2, maxWaitMs: 5_000 }, "a");
  void held.add("two", "r1", { maxCalls: 10, maxWaitMs: 100 }, "b");
  void held.add("one", "r1", { maxCalls: 2, maxWaitMs: 5_000 }, "c");
  expect(sent).toEqual(["r1: a,c"]);
  clock.advance(100);
  held.tick();
  expect(sent).toEqual(["r1: a,c", "r1: b"]);
});

test("maxBytes: a call that would take the body past it sends what waits first; one larger alone goes alone", () => {
  const { held, sent } = setup({ framing: { around: 2, between: 1 } });
  const bytes = { maxCalls: 100, maxBytes: 10, maxWaitMs: 1_000 };
  // 2 + 3 + 1 + 3 = 9 bytes: room for no third call of 3.
  void held.add("k", "r1", bytes, "aaa", 3);
  void held.add("k", "r1", bytes, "bbb", 3);
  expect(sent).toEqual([]);
  void held.add("k", "r1", bytes, "ccc", 3);
  expect(sent).toEqual(["r1: aaa,bbb"]);
  void held.add("k", "r1", bytes, "too-large", 20);
  expect(sent).toEqual(["r1: aaa,bbb", "r1: ccc", "r1: too-large"]);
  // Exactly at the bound: full, it goes at once.
  void held.add("k", "r1", bytes, "eight!!!", 8);
  expect(sent.at(-1)).toBe("r1: eight!!!");
});

test("a call of another context sends what waits first: a batch goes with the settings its calls came with", () => {
  const { held, sent } = setup({ sameContext: (a, b) => a.split("/")[0] === b.split("/")[0] });
  void held.add("k", "r1/x", limits, "a");
  // The same context by sameContext: it joins, and the batch keeps the context it was opened with.
  void held.add("k", "r1/y", limits, "b");
  void held.add("k", "r2/x", limits, "c");
  expect(sent).toEqual(["r1/x: a,b"]);
  held.flush();
  expect(sent).toEqual(["r1/x: a,b", "r2/x: c"]);
});

test("release sends a key's batch only when it was opened with that context", () => {
  const { held, sent } = setup();
  void held.add("k", "r2", limits, "a");
  held.release("k", "r1");
  expect(sent).toEqual([]);
  held.release("k", "r2");
  expect(sent).toEqual(["r2: a"]);
  held.release("missing", "r2");
  expect(sent).toEqual(["r2: a"]);
});

test("close sends every batch and waits until every send has settled", async () => {
  const { held, sent, settle } = setup();
  const first = held.add("one", "r1", limits, "a");
  void held.add("two", "r1", limits, "b");
  let closed = false;
  const closing = held.close().then(() => {
    closed = true;
  });
  expect(sent.sort()).toEqual(["r1: a", "r1: b"]);
  await new Promise((resolve) => setImmediate(resolve));
  expect(closed).toBe(false);
  settle();
  await closing;
  expect(await first).toBe("r1: a");
});

test("with no tick, a timer sends the batch in real time once the clock says it has waited", async () => {
  const { held, sent } = setup({ atOnce: true });
  const result = held.add("k", "r1", { maxCalls: 10, maxWaitMs: 0 }, "a");
  expect(sent).toEqual([]);
  expect(await result).toBe("r1: a");
});
