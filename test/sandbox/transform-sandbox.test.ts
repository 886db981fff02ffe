import { afterAll, expect, test } from "vitest";
import { createTransformSandboxes } from "../../src/sandbox/transform-sandbox.js";

const sandboxes = createTransformSandboxes({ timeoutMs: 200, memoryMb: 16 });
afterAll(() => sandboxes.close());

const body = JSON.stringify({ type: "track", event: "Signed Up", properties: { plan: "pro" } });
const rename = `function transform(event) {
  event.event = event.event === "Signed Up" ? "signup" : event.event;
  event.properties.source = "waypost";
  return event;
}`;

/** After every hostile transform, a good one in another sandbox still works: the host is fine. */
async function stillWorks() {
  const outcome = await sandboxes.run("good", rename, body);
  expect(outcome).toMatchObject({ kind: "send" });
  expect(JSON.parse((outcome as { body: string }).body)).toEqual({
    type: "track",
    event: "signup",
    properties: { plan: "pro", source: "waypost" },
  });
}

test("a transform reshapes the body; null drops the call", async () => {
  await stillWorks();
  expect(await sandboxes.run("drop", "function transform(e) { return e.type === 'track' ? null : e }", body)).toMatchObject({
    kind: "dropped",
  });
});

test("the sandbox is kept across calls of one key", async () => {
  const counter = "let n = 0; function transform(e) { n += 1; e.n = n; return e }";
  const first = await sandboxes.run("counter", counter, body);
  const second = await sandboxes.run("counter", counter, body);
  expect(JSON.parse((first as { body: string }).body).n).toBe(1);
  expect(JSON.parse((second as { body: string }).body).n).toBe(2);
});

test.each([
  ["an endless loop", "function transform(e) { while (true) {} }", /^ran longer than 200 ms( of CPU time$| \(5000 ms of wall time)/],
  [
    "an endless loop at the top level",
    "while (true) {} function transform(e) { return e }",
    /^ran longer than 200 ms( of CPU time$| \(5000 ms of wall time)/,
  ],
  ["a memory bomb", "function transform(e) { const a = []; while (true) a.push(new Array(100000).fill(1)); }", /out of memory|longer than/],
  ["deep recursion", "function f(n) { return f(n + 1) + 1 } function transform(e) { return f(0) }", /RangeError|stack|longer than/],
  ["a throw", "function transform(e) { throw new Error('bad event') }", /^Error: bad event \(line 1\)$/],
  ["require", "function transform(e) { return require('fs') }", /ReferenceError: .*require/],
  ["process", "function transform(e) { return process.env }", /ReferenceError: .*process/],
  ["fetch", "function transform(e) { fetch('http://127.0.0.1/'); return e }", /ReferenceError: .*fetch/],
  ["timers", "function transform(e) { setTimeout(() => {}, 1); return e }", /ReferenceError: .*setTimeout/],
  ["import()", "function transform(e) { return import('node:fs') }", /must return a plain object or null/],
  ["no transform function", "const x = 1", /must define function transform/],
  ["a string result", "function transform(e) { return 'hi' }", /must return a plain object or null, not string/],
  ["an array result", "function transform(e) { return [e] }", /not an array/],
  ["a result over 32 KB", "function transform(e) { e.big = 'x'.repeat(40000); return e }", /over the limit of 32768 bytes/],
  ["a replaced JSON", "JSON.stringify = () => '[]'; function transform(e) { return 1 }", /must return a plain object/],
])("%s fails that call and nothing else", async (_name, source, expected) => {
  const outcome = await sandboxes.run(`hostile-${_name}`, source, body);
  expect(outcome.kind).toBe("error");
  expect((outcome as { message: string }).message).toMatch(expected);
  await stillWorks();
});

test("a syntax error is found without running anything, with its line", async () => {
  expect(await sandboxes.syntaxError("function transform(e) {\n  return e +;\n}")).toMatch(/^SyntaxError: .* \(line 2\)$/);
  expect(await sandboxes.syntaxError("while (true) {} function transform(e) { return e }")).toBeUndefined();
});
