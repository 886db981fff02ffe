import { afterEach, expect, test } from "vitest";
import { createSandboxHost } from "../../src/sandbox/sandbox-host.js";
import { createTransformSandboxes, type TransformOutcome, type TransformSandboxes } from "../../src/sandbox/transform-sandbox.js";

// The pool of sandbox workers: only the call that overran fails, errors
// are described within the time limit, concurrent first calls share one
// sandbox, a slow transform holds one worker and its turns, and a syntax
// check never waits behind deliveries.

const open: TransformSandboxes[] = [];
afterEach(() => {
  for (const sandboxes of open.splice(0)) sandboxes.close();
});
function pool(options: Parameters<typeof createTransformSandboxes>[0]): TransformSandboxes {
  const sandboxes = createTransformSandboxes(options);
  open.push(sandboxes);
  return sandboxes;
}

const body = (n: number) => JSON.stringify({ type: "track", event: "Signed Up", n });
const rename = "function transform(e) { e.event = 'renamed'; return e }";
const counter = "let n = 0; function transform(e) { n += 1; e.count = n; return e }";
const countOf = (outcome: TransformOutcome) => JSON.parse((outcome as { body: string }).body).count as number;
// A built-in that runs natively for seconds: the interpreter cannot interrupt it; only the watchdog ends it.
const nativeHog = "function transform(e) { new Array(1e6).fill(1.2345678901234567e-300).sort(); return e }";
const loop = "function transform(e) { while (true) {} }";

test.each([
  ["an Error's message getter", "const e = new Error('x'); Object.defineProperty(e, 'message', { get() { while (true) {} } }); throw e"],
  ["a thrown object's message getter", "throw { name: 'X', get message() { while (true) {} } }"],
  ["an Error's stack getter", "const e = new Error('x'); Object.defineProperty(e, 'stack', { get() { while (true) {} } }); throw e"],
])(
  "a thrown value whose %s loops is a timeout within the limit, and its worker goes on",
  async (_name, thrower) => {
    // A long grace: had describing the error escaped the time limit, the watchdog would not answer within the test.
    const sandboxes = pool({ timeoutMs: 100, memoryMb: 16, workers: 1, graceMs: 600_000 });
    expect(countOf(await sandboxes.run("counter", counter, body(1)))).toBe(1);
    const outcome = await sandboxes.run("getter", `function transform(event) { ${thrower} }`, body(2));
    expect(outcome).toMatchObject({
      kind: "error",
      message: expect.stringMatching(/^ran longer than 100 ms( of CPU time$| \(5000 ms of wall time)/),
      failure: "timeout",
    });
    // The same worker, its other sandboxes untouched: it was never ended.
    expect(countOf(await sandboxes.run("counter", counter, body(3)))).toBe(2);
  },
  60_000,
);

test("after the watchdog ends a worker, only the calls that ran past the limit fail; the rest run in a new one", async () => {
  const sandboxes = pool({ timeoutMs: 50, memoryMb: 128, workers: 1, graceMs: 300 });
  const calls: Array<Promise<[string, TransformOutcome]>> = [];
  const run = (key: string, source: string, n: number) =>
    calls.push(sandboxes.run(key, source, body(n)).then((outcome) => [key, outcome] as [string, TransformOutcome]));
  for (let i = 0; i < 12; i++) {
    if (i % 4 === 0) run(`hog-${i}`, nativeHog, i);
    run(`innocent-${i % 3}`, rename, i);
  }
  const outcomes = await Promise.all(calls);
  for (const [key, outcome] of outcomes) {
    if (key.startsWith("hog"))
      expect(outcome).toMatchObject({ kind: "error", message: expect.stringMatching(/^ran longer than /), failure: "timeout" });
    else expect(outcome).toMatchObject({ kind: "send" });
  }
  expect(outcomes.filter(([key]) => key.startsWith("innocent"))).toHaveLength(12);
}, 120_000);

test("two calls making one sandbox at once share it, and a failing one does not pull it from under the other", async () => {
  const host = createSandboxHost({ timeoutMs: 1_000, memoryMb: 16 });
  try {
    const source = "function transform(e) { if (e.n % 2 === 1) throw new Error('odd'); return e }";
    const outcomes = await Promise.all([0, 1, 2, 3, 4, 5].map((n) => host.run("fresh", source, body(n))));
    outcomes.forEach((outcome, n) => {
      if (n % 2 === 1) expect(outcome).toMatchObject({ kind: "error", message: "Error: odd (line 1)" });
      else expect(outcome).toMatchObject({ kind: "send" });
    });
    // Through the pool as well: the first calls of a destination arrive together.
    const sandboxes = pool({ timeoutMs: 1_000, memoryMb: 16, workers: 2 });
    const viaPool = await Promise.all([0, 1, 2, 3, 4, 5].map((n) => sandboxes.run("fresh", source, body(n))));
    expect(viaPool.map((o) => o.kind)).toEqual(["send", "error", "send", "error", "send", "error"]);
  } finally {
    host.close();
  }
}, 60_000);

test("a slow transform holds one worker and its turns: other destinations' calls do not wait for its queue", async () => {
  const sandboxes = pool({ timeoutMs: 100, memoryMb: 16, workers: 2, graceMs: 600_000 });
  let hogAnswered = 0;
  const hog = Array.from({ length: 20 }, (_, i) =>
    sandboxes.run("hog", loop, body(i)).then((outcome) => {
      hogAnswered++;
      return outcome;
    }),
  );
  const innocent = await Promise.all(Array.from({ length: 10 }, (_, i) => sandboxes.run(`innocent-${i % 2}`, rename, body(i))));
  for (const outcome of innocent) expect(outcome).toMatchObject({ kind: "send" });
  // The hog's queue (two seconds of work) was far from done meanwhile.
  expect(hogAnswered).toBeLessThan(20);
  for (const outcome of await Promise.all(hog)) expect(outcome).toMatchObject({ message: expect.stringMatching(/^ran longer than /) });
}, 60_000);

test("on one worker, destinations take turns: the slow one's queue is not ahead of the others", async () => {
  const sandboxes = pool({ timeoutMs: 100, memoryMb: 16, workers: 1, graceMs: 600_000 });
  let hogAnswered = 0;
  const hog = Array.from({ length: 20 }, (_, i) => sandboxes.run("hog", loop, body(i)).then(() => hogAnswered++));
  const innocent = await Promise.all(Array.from({ length: 4 }, (_, i) => sandboxes.run(`innocent-${i}`, rename, body(i))));
  for (const outcome of innocent) expect(outcome).toMatchObject({ kind: "send" });
  expect(hogAnswered).toBeLessThan(20);
  await Promise.all(hog);
}, 60_000);

test("a delivery that may be put off is answered busy at once while its destination's queue is long", async () => {
  const sandboxes = pool({ timeoutMs: 100, memoryMb: 16, workers: 1, graceMs: 600_000 });
  // Its time per call is known once one call is answered.
  expect(await sandboxes.run("hog", loop, body(0))).toMatchObject({ message: expect.stringMatching(/^ran longer than /) });
  const queued = Array.from({ length: 30 }, (_, i) => sandboxes.run("hog", loop, body(i), { mayDefer: true }));
  const outcomes = await Promise.all(queued);
  const busy = outcomes.filter((o) => o.kind === "busy").length;
  expect(busy).toBeGreaterThan(0);
  // Those that were queued waited about a second's worth, not thirty calls'.
  expect(30 - busy).toBeLessThanOrEqual(Math.ceil(1_000 / 100) + 2);
  // Without mayDefer (a test run) nothing is put off.
  expect(await sandboxes.run("other", rename, body(1))).toMatchObject({ kind: "send" });
}, 60_000);

test("making a sandbox is not counted as a call's time: a slow start does not put the next deliveries off", async () => {
  const sandboxes = pool({ timeoutMs: 5_000, memoryMb: 16, workers: 1, graceMs: 600_000 });
  // About 1.5 s of top-level work when the sandbox is made; each call then takes well under a millisecond.
  const slowStart = "const t = Date.now(); while (Date.now() - t < 1500) {} function transform(e) { return e }";
  expect(await sandboxes.run("slow-start", slowStart, body(0))).toMatchObject({ kind: "send" });
  const outcomes = await Promise.all(
    Array.from({ length: 4 }, (_, i) => sandboxes.run("slow-start", slowStart, body(i), { mayDefer: true })),
  );
  expect(outcomes.map((o) => o.kind)).toEqual(["send", "send", "send", "send"]);
}, 60_000);

test("a syntax check does not wait behind deliveries' transforms", async () => {
  const sandboxes = pool({ timeoutMs: 100, memoryMb: 16, workers: 1, graceMs: 600_000 });
  let hogAnswered = 0;
  const hog = Array.from({ length: 20 }, (_, i) => sandboxes.run(`hog-${i % 2}`, loop, body(i)).then(() => hogAnswered++));
  expect(await sandboxes.syntaxError("function transform(e) {\n  return e +;\n}")).toMatch(/^SyntaxError: .* \(line 2\)$/);
  expect(await sandboxes.syntaxError(rename)).toBeUndefined();
  expect(hogAnswered).toBeLessThan(20);
  await Promise.all(hog);
}, 60_000);

test("a destination's new settings revision frees the old one's sandbox; deleting it frees all; forget frees a test run's", async () => {
  const sandboxes = pool({ timeoutMs: 1_000, memoryMb: 16, workers: 1 });
  const destination = "6f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f";
  expect(countOf(await sandboxes.run(`${destination}:1`, counter, body(1)))).toBe(1);
  expect(countOf(await sandboxes.run(`${destination}:1`, counter, body(2)))).toBe(2);
  expect(countOf(await sandboxes.run(`${destination}:2`, counter, body(3)))).toBe(1);
  // Revision 1 was freed when revision 2 came: a late call of it starts from scratch, and frees nothing newer.
  expect(countOf(await sandboxes.run(`${destination}:1`, counter, body(4)))).toBe(1);
  expect(countOf(await sandboxes.run(`${destination}:2`, counter, body(4)))).toBe(2);
  // Deleted: every sandbox of the destination goes.
  sandboxes.forgetDestination(destination);
  expect(countOf(await sandboxes.run(`${destination}:2`, counter, body(4)))).toBe(1);
  expect(countOf(await sandboxes.run("test:a", counter, body(5)))).toBe(1);
  sandboxes.forget("test:a");
  expect(countOf(await sandboxes.run("test:a", counter, body(6)))).toBe(1);
}, 60_000);
