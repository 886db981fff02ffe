// @ts-check
// `node bench/transform-sandbox.mjs [--calls=N]` (after `npm run build`): the
// time one call spends in a destination's transform, through the worker
// thread the delivery loop uses, one call at a time (as the loop awaits
// each); beside it the same work as plain JavaScript in this thread and the
// field drop alone. One JSON line.
import { dropFields } from "../dist/src/routing/drop-fields.js";
import { createTransformSandboxes } from "../dist/src/sandbox/transform-sandbox.js";

const calls = Number(process.argv.find((a) => a.startsWith("--calls="))?.slice(8) ?? 20_000);
const body = JSON.stringify({
  type: "track",
  event: "Signed Up",
  userId: "user-1234",
  messageId: "3f1e0e6c-6a4a-4d55-9a0e-8f0d6c2a9b11",
  properties: { plan: "pro", seats: 12, source: "web" },
  context: { ip: "203.0.113.9", library: { name: "analytics-node", version: "3.1.0" } },
  timestamp: "2026-11-25T07:00:00.000Z",
});
const source = `function transform(event) {
  event.event = event.event === "Signed Up" ? "signup" : event.event;
  event.properties.routed_by = "waypost";
  return event;
}`;

const sandboxes = createTransformSandboxes({ timeoutMs: 1000, memoryMb: 32 });
await sandboxes.run("warm", source, body);
let start = performance.now();
let insideMs = 0;
for (let i = 0; i < calls; i++) {
  const out = await sandboxes.run("bench", source, body);
  if (out.kind !== "send") throw new Error(JSON.stringify(out));
  insideMs += out.elapsedMs;
}
const sandboxUs = ((performance.now() - start) * 1000) / calls;
// Many calls in flight at once, as a busy delivery loop has them: throughput, not latency.
start = performance.now();
await Promise.all(Array.from({ length: calls }, () => sandboxes.run("bench", source, body)));
const pipelinedUs = ((performance.now() - start) * 1000) / calls;
sandboxes.close();

/** @param {any} event */
const plain = (event) => {
  event.event = event.event === "Signed Up" ? "signup" : event.event;
  event.properties.routed_by = "waypost";
  return event;
};
start = performance.now();
for (let i = 0; i < calls; i++) JSON.stringify(plain(JSON.parse(body)));
const plainUs = ((performance.now() - start) * 1000) / calls;

start = performance.now();
for (let i = 0; i < calls; i++) {
  const parsed = JSON.parse(body);
  dropFields(parsed, ["context.ip", "properties.seats"]);
  JSON.stringify(parsed);
}
const dropUs = ((performance.now() - start) * 1000) / calls;

console.log(
  JSON.stringify({
    scenario: "transform-sandbox",
    calls,
    us_per_call_sandbox: Math.round(sandboxUs * 10) / 10,
    us_per_call_inside_quickjs: Math.round((insideMs * 1000 * 10) / calls) / 10,
    us_per_call_sandbox_many_in_flight: Math.round(pipelinedUs * 10) / 10,
    us_per_call_plain_js_same_thread: Math.round(plainUs * 100) / 100,
    us_per_call_drop_fields: Math.round(dropUs * 100) / 100,
  }),
);
