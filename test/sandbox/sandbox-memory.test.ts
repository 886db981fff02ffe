import { afterAll, beforeAll, expect, test } from "vitest";
import { createTransformSandboxes, type TransformOutcome } from "../../src/sandbox/transform-sandbox.js";

// Memory bombs of every shape, in several destinations' sandboxes at once:
// each sandbox is bounded whatever the code does inside a built-in, the
// process's RSS rises by a bounded amount, the memory comes back, and the
// destinations that did nothing wrong never fail.

const memoryMb = 32;
const failures: Array<[string, string]> = [];
// Long enough that every bomb reaches the memory bound before the time limit.
const sandboxes = createTransformSandboxes({
  timeoutMs: 3_000,
  memoryMb,
  workers: 4,
  onFailure: (key, failure) => failures.push([key, failure]),
});
afterAll(() => sandboxes.close());

const body = (messageId: string) => JSON.stringify({ type: "track", event: "Signed Up", messageId, properties: { plan: "pro" } });
const rename = "function transform(e) { e.event = 'renamed'; return e }";

/** The process's highest RSS while `work` runs, sampled every few milliseconds. */
async function peakRssDuring(work: () => Promise<void>): Promise<number> {
  let peak = process.memoryUsage.rss();
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 5);
  try {
    await work();
  } finally {
    clearInterval(sampler);
  }
  return Math.max(peak, process.memoryUsage.rss());
}

/** Innocent destinations' calls, beside the bombs: every one transformed. */
async function innocentCalls(prefix: string, count: number): Promise<TransformOutcome[]> {
  const outcomes: TransformOutcome[] = [];
  for (let i = 0; i < count; i++) outcomes.push(await sandboxes.run(`${prefix}-${i % 3}`, rename, body(`${prefix}-${i}`)));
  return outcomes;
}

function expectAllSent(outcomes: readonly TransformOutcome[]) {
  for (const outcome of outcomes) expect(outcome).toMatchObject({ kind: "send" });
}

let baseline = 0;
beforeAll(async () => {
  // Every worker started and warm: the growth measured is the sandboxes'.
  expectAllSent(await Promise.all(Array.from({ length: 8 }, (_, i) => sandboxes.run(`warm-${i}`, rename, body(`w${i}`)))));
  baseline = process.memoryUsage.rss();
}, 60_000);

test("four transforms filling arrays at once raise RSS by at most 256 MB, and other destinations keep transforming", async () => {
  const bomb = "function transform(e) { const a = []; while (true) a.push(new Array(1e6).fill(1)); }";
  let bombs: TransformOutcome[][] = [];
  let innocent: TransformOutcome[] = [];
  const peak = await peakRssDuring(async () => {
    [bombs, innocent] = await Promise.all([
      Promise.all(
        Array.from({ length: 4 }, async (_, d) => {
          const outcomes: TransformOutcome[] = [];
          for (let round = 0; round < 3; round++) outcomes.push(await sandboxes.run(`arrays-${d}`, bomb, body(`a${d}-${round}`)));
          return outcomes;
        }),
      ),
      innocentCalls("beside-arrays", 30),
    ]);
  });
  for (const outcome of bombs.flat())
    expect(outcome).toMatchObject({ kind: "error", message: "ran out of memory", failure: "out_of_memory" });
  expectAllSent(innocent);
  expect((peak - baseline) / 1024 / 1024).toBeLessThanOrEqual(256);
  // The bombs' sandboxes were thrown away and made anew: the destinations work again once fixed.
  expectAllSent(await innocentCalls("after-arrays", 6));
}, 120_000);

test("typed arrays, strings and a leaky cache are bounded too: only the offending calls fail", async () => {
  const typed = "function transform(e) { const a = []; while (true) a.push(new Uint8Array(1e7)); }";
  const strings = "function transform(e) { const a = []; let i = 0; while (true) a.push('y'.repeat(1e6) + i++); }";
  // Remembers a megabyte per call: fine for a while, then past the bound.
  const cache = "const seen = {}; function transform(e) { seen[e.messageId] = 'z'.repeat(1e6) + e.messageId; return e }";
  let typedOutcomes: TransformOutcome[] = [];
  let stringOutcomes: TransformOutcome[] = [];
  let cacheOutcomes: TransformOutcome[] = [];
  let innocent: TransformOutcome[] = [];
  const peak = await peakRssDuring(async () => {
    [typedOutcomes, stringOutcomes, cacheOutcomes, innocent] = await Promise.all([
      Promise.all([0, 1, 2].map((i) => sandboxes.run("typed", typed, body(`t${i}`)))),
      Promise.all([0, 1, 2].map((i) => sandboxes.run("strings", strings, body(`s${i}`)))),
      (async () => {
        const outcomes: TransformOutcome[] = [];
        for (let i = 0; i < 90; i++) outcomes.push(await sandboxes.run("cache", cache, body(`c${i}`)));
        return outcomes;
      })(),
      innocentCalls("beside-shapes", 30),
    ]);
  });
  for (const outcome of [...typedOutcomes, ...stringOutcomes]) {
    expect(outcome).toMatchObject({ kind: "error", message: "ran out of memory", failure: "out_of_memory" });
  }
  // The cache fills its sandbox, that call fails, the next starts from an empty sandbox and succeeds.
  const failedAt = cacheOutcomes.map((o, i) => (o.kind === "error" ? i : -1)).filter((i) => i >= 0);
  expect(failedAt.length).toBeGreaterThanOrEqual(1);
  expect(failedAt[0]).toBeGreaterThan(memoryMb / 2);
  for (const i of failedAt) {
    expect(cacheOutcomes[i]).toMatchObject({ message: "ran out of memory", failure: "out_of_memory" });
    if (i + 1 < cacheOutcomes.length) expect(cacheOutcomes[i + 1]).toMatchObject({ kind: "send" });
  }
  expect(cacheOutcomes.filter((o) => o.kind === "send").length).toBe(90 - failedAt.length);
  expectAllSent(innocent);
  expect((peak - baseline) / 1024 / 1024).toBeLessThanOrEqual(256);
  // Only the offenders were counted as failing.
  expect(new Set(failures.map(([key]) => key.replace(/-\d+$/, "")))).toEqual(new Set(["arrays", "typed", "strings", "cache"]));
}, 120_000);

test("the memory of thrown-away sandboxes goes back to the system", async () => {
  const bomb = "function transform(e) { const a = []; while (true) a.push(new Uint8Array(1e6)); }";
  for (let i = 0; i < 10; i++) expect(await sandboxes.run(`again-${i}`, bomb, body(`g${i}`))).toMatchObject({ kind: "error" });
  // Ten full sandboxes thrown away: never ten sandboxes' worth held.
  expect((process.memoryUsage.rss() - baseline) / 1024 / 1024).toBeLessThan(5 * (memoryMb + 6));
}, 120_000);
