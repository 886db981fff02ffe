// @ts-check
// Benchmark of the batching client (waypost/client), run against the build:
//
//   npm run build && node bench/client-track.mjs [--endpoint URL --write-key KEY] [--calls N] [--quick]
//
// (or WAYPOST_BENCH_ENDPOINT / WAYPOST_BENCH_WRITE_KEY). Prints one JSON
// object per line:
//   - baseline: a bare array push of a call-shaped object, the floor any
//     queueing client pays; baseline_stringify: the same with one
//     JSON.stringify, the floor of a client that checks the 32 KB limit;
//   - track_caller: the cost of one track() on the caller's thread (validate,
//     JSON-encode once, messageId, enqueue), goal <= 2 us;
//   - track_amortised: the same plus the background work it causes on the
//     same thread (batching, protobuf encoding, an in-memory server);
//   - end_to_end: calls/s sustained into a running Waypost from one process,
//     acknowledged by the server (skipped without an endpoint).
// Also exports run(options) for bench/run.mjs.
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { create, toJsonString } from "@bufbuild/protobuf";
import { Analytics, BatchRequestSchema, BatchResponseSchema } from "../packages/client/dist/packages/client/src/index.js";

const makeCall = (/** @type {number} */ i) => ({
  userId: `user-${i & 1023}`,
  event: "Order Completed",
  properties: { orderId: `o-${i}`, total: 42.5, currency: "EUR", items: 3 },
});

/**
 * Prints one result line and returns it.
 * @template {object} T
 * @param {T} result
 * @returns {T}
 */
function print(result) {
  process.stdout.write(`${JSON.stringify({ bench: "client-track", ...result })}\n`);
  return result;
}

/**
 * ns per op over `rounds` rounds of `ops` synchronous operations each, on
 * fresh state per round: short rounds keep the measured objects young, as
 * calls are in a client that sends them within milliseconds (100k calls
 * held at once would measure the garbage collector's promotion instead).
 * @template S
 * @param {number} ops
 * @param {number} rounds
 * @param {() => S} setup
 * @param {(state: S, i: number) => unknown} op
 * @param {(state: S) => Promise<unknown>} [teardown]
 */
async function timeSync(ops, rounds, setup, op, teardown = async () => {}) {
  const samples = [];
  for (let r = 0; r < rounds; r++) {
    const state = setup();
    const start = process.hrtime.bigint();
    for (let i = 0; i < ops; i++) op(state, i);
    samples.push(Number(process.hrtime.bigint() - start) / ops);
    await teardown(state);
  }
  // Drop the warm-up third; report the median and the best round.
  const warm = samples.slice(Math.floor(rounds / 3)).sort((a, b) => a - b);
  return { ns_per_op: round(warm[Math.floor(warm.length / 2)] ?? NaN), min_ns_per_op: round(warm[0] ?? NaN) };
}

const round = (/** @type {number} */ n) => Math.round(n * 10) / 10;

/**
 * A transport with no server behind it: it serialises each request to
 * Connect JSON, as the real transport does, and acknowledges every call. So
 * what it measures is the client's own CPU, not a server's.
 */
function acknowledgingTransport() {
  /** @type {import("@connectrpc/connect").Transport} */
  const transport = {
    async unary(method, _signal, _timeoutMs, _header, input) {
      const request = /** @type {import("../packages/client/dist/packages/client/src/index.js").BatchRequest} */ (
        /** @type {unknown} */ (input)
      );
      const body = toJsonString(BatchRequestSchema, request);
      const message = create(BatchResponseSchema, { accepted: body.length > 0 ? request.batch.length : 0 });
      return {
        stream: false,
        service: method.parent,
        method,
        header: new Headers(),
        trailer: new Headers(),
        // The transport is generic over every method; this one only ever answers Batch.
        message: /** @type {any} */ (message),
      };
    },
    stream() {
      throw new Error("unused");
    },
  };
  return transport;
}

/**
 * @param {number} ops
 * @param {number} rounds
 */
async function benchCaller(ops, rounds) {
  const baseline = await timeSync(
    ops,
    rounds,
    () => /** @type {object[]} */ ([]),
    (queue, i) => queue.push(makeCall(i)),
  );
  print({ name: "baseline", what: "array push of a call-shaped object", ops: ops * rounds, ...baseline });
  // The floor of any client that checks a call's encoded size when it is made.
  const stringify = await timeSync(
    ops,
    rounds,
    () => /** @type {string[]} */ ([]),
    (queue, i) => queue.push(JSON.stringify(makeCall(i))),
  );
  print({ name: "baseline_stringify", what: "array push of JSON.stringify of the call", ops: ops * rounds, ...stringify });
  const transport = acknowledgingTransport();
  const caller = await timeSync(
    ops,
    rounds,
    // flushAt above ops: nothing is sent inside the timed loop, so this is
    // the caller's cost alone. Closed (outside the timing) after each round.
    () =>
      new Analytics({
        writeKey: "bench",
        endpoint: "http://127.0.0.1:9",
        transport,
        flushAt: ops + 1,
        flushInterval: 3_600_000,
        maxQueueSize: ops + 1,
      }),
    (analytics, i) => analytics.track(makeCall(i)),
    (analytics) => analytics.close(),
  );
  print({
    name: "track_caller",
    what: "one track() on the caller's thread",
    ops: ops * rounds,
    ...caller,
    goal_ns: 2000,
    within_goal: caller.ns_per_op <= 2000,
    vs_baseline: round(caller.ns_per_op / baseline.ns_per_op),
    vs_baseline_stringify: round(caller.ns_per_op / stringify.ns_per_op),
  });
}

/** @param {number} ops */
async function benchAmortised(ops) {
  let failed = 0;
  const analytics = new Analytics({
    writeKey: "bench",
    endpoint: "http://127.0.0.1:9",
    transport: acknowledgingTransport(),
    onFailure: () => failed++,
  });
  const start = process.hrtime.bigint();
  for (let i = 0; i < ops; i++) {
    analytics.track(makeCall(i));
    // Let the background work run, as an application's event loop would.
    if (i % 100 === 99) await new Promise((resolve) => setImmediate(resolve));
  }
  await analytics.close();
  const ns = Number(process.hrtime.bigint() - start) / ops;
  print({
    name: "track_amortised",
    what: "track() plus the background work it causes (batching, protobuf, JSON body), no server",
    ops,
    failed,
    ns_per_op: round(ns),
  });
}

/**
 * @param {string} endpoint
 * @param {string} writeKey
 * @param {number} calls
 */
async function benchEndToEnd(endpoint, writeKey, calls) {
  let failed = 0;
  let requests = 0;
  const analytics = new Analytics({
    writeKey,
    endpoint,
    onFailure: () => failed++,
    interceptors: [
      (next) => (req) => {
        requests++;
        return next(req);
      },
    ],
  });
  const started = performance.now();
  for (let i = 0; i < calls; i++) {
    analytics.track(makeCall(i));
    // Stay under maxQueueSize: a producer faster than the server waits here.
    while (analytics.pendingCalls >= 8_000) await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await analytics.close();
  const seconds = (performance.now() - started) / 1000;
  return print({
    name: "end_to_end",
    what: "calls acknowledged by a running Waypost, one process, default settings",
    endpoint,
    calls,
    requests,
    failed,
    seconds: round(seconds),
    calls_per_second: Math.round((calls - failed) / seconds),
  });
}

/**
 * Runs every part; `endpoint` and `writeKey` enable the end-to-end part.
 * @param {{ ops?: number, rounds?: number, amortisedOps?: number, endpoint?: string, writeKey?: string, calls?: number }} [options]
 */
export async function run(options = {}) {
  await benchCaller(options.ops ?? 1_000, options.rounds ?? 300);
  await benchAmortised(options.amortisedOps ?? 100_000);
  const endpoint = options.endpoint ?? process.env.WAYPOST_BENCH_ENDPOINT;
  const writeKey = options.writeKey ?? process.env.WAYPOST_BENCH_WRITE_KEY;
  if (!endpoint || !writeKey) {
    print({ name: "end_to_end", skipped: "pass --endpoint and --write-key (or WAYPOST_BENCH_ENDPOINT, WAYPOST_BENCH_WRITE_KEY)" });
    return;
  }
  await benchEndToEnd(endpoint, writeKey, options.calls ?? 50_000);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      endpoint: { type: "string" },
      "write-key": { type: "string" },
      calls: { type: "string" },
      quick: { type: "boolean" },
    },
  });
  await run({
    endpoint: values.endpoint,
    writeKey: values["write-key"],
    calls: values.calls ? Number(values.calls) : undefined,
    ...(values.quick ? { rounds: 30, amortisedOps: 10_000 } : {}),
  });
}
