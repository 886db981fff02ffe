import type { QuickJSContext, QuickJSHandle, QuickJSRuntime } from "quickjs-emscripten-core";
import { createCpuBudget, threadCpuClock, type CpuBudget, type CpuClock } from "./cpu-budget.js";
import { sandboxLimits } from "./sandbox-limits.js";
import { grew, newSandboxInstance, type SandboxInstance } from "./sandbox-instance.js";

/** Why a sandbox failed a call, besides the transform's own errors: what /metrics counts. */
export type SandboxFailure = "timeout" | "out_of_memory" | "worker_ended";

/** What a transform made of one body. */
export type TransformOutcome =
  | { kind: "send"; body: string; elapsedMs: number }
  | { kind: "dropped"; elapsedMs: number }
  | { kind: "error"; message: string; elapsedMs: number; failure?: SandboxFailure }
  /** Not run: the destination's sandbox has more waiting than it can run soon (only when the caller may defer). */
  | { kind: "busy"; elapsedMs: 0 };

export interface SandboxHostOptions {
  /** Most CPU time one call may use (WAYPOST_TRANSFORM_TIMEOUT_MS); a wall-clock backstop (wallBackstopMs) ends it too. */
  timeoutMs: number;
  /** Most memory one destination's sandbox may hold (WAYPOST_TRANSFORM_MEMORY_MB). */
  memoryMb: number;
  /** Sandboxes kept in this thread; past it the least recently used goes. */
  maxSandboxes?: number;
  /**
   * Runs a full garbage collection of this thread: a discarded sandbox's
   * memory goes back to the system only when its WebAssembly.Memory is
   * collected, which V8 may otherwise put off for several sandboxes' worth.
   */
  collect?: () => void;
  /** What a call's time is measured on (default: this thread's CPU clock; a test may hand in a stopped one). */
  cpuClock?: CpuClock;
}

/**
 * The sandboxes themselves, in the worker thread that runs them
 * (transform-worker.ts). Each sandbox is its own interpreter instance over
 * its own bounded memory (sandbox-instance.ts).
 */
export interface SandboxHost {
  /**
   * Runs `source`'s transform over `body` in the sandbox kept for `key` (a
   * destination and its settings revision), creating it on first use. A
   * failure throws the sandbox away; the next call makes it anew, so one bad
   * call cannot poison the next.
   */
  run(key: string, source: string, body: string, maxResultBytes?: number): Promise<TransformOutcome>;
  /** A syntax error in `source` with its line, or undefined. Compiles only: runs nothing. */
  syntaxError(source: string): Promise<string | undefined>;
  /** Frees the sandbox kept for `key`. */
  forget(key: string): void;
  /** Between calls: gives the memory of sandboxes thrown away since the last call back to the system. */
  afterCall(): void;
  close(): void;
}

interface Sandbox {
  instance: SandboxInstance;
  runtime: QuickJSRuntime;
  context: QuickJSContext;
  run: QuickJSHandle;
}

// Captures JSON and the checks before the transform's own code runs, so a
// transform that replaces JSON or Object cannot fake its result's shape.
const harness = `
globalThis.__waypostRun = (function () {
  const parse = JSON.parse, stringify = JSON.stringify, protoOf = Object.getPrototypeOf, objectProto = Object.prototype;
  return function (input) {
    if (typeof globalThis.transform !== "function") throw new TypeError("the source must define function transform(event)");
    const out = globalThis.transform(parse(input));
    if (out === null) return null;
    if (typeof out !== "object" || Array.isArray(out) || protoOf(out) !== objectProto) {
      throw new TypeError("must return a plain object or null, not " + (Array.isArray(out) ? "an array" : typeof out));
    }
    return stringify(out);
  };
})();`;

/** CPU time given to read a thrown value's name and message (its getters run) when the call's own time is nearly spent. */
const describeMs = 10;

/** A failure with what the metrics count it as. */
class SandboxError extends Error {
  constructor(
    message: string,
    readonly failure?: SandboxFailure,
  ) {
    super(message);
  }
}

/** Loads and warms the interpreter in this thread, so that no call's time limit pays for it. */
export async function warmUpSandboxes(memoryMb: number): Promise<void> {
  // The first evaluation in a thread is many times slower than the next
  // (the WebAssembly code warms up); done here, it counts against no transform.
  const { module } = await newSandboxInstance(memoryMb);
  const runtime = module.newRuntime();
  const context = runtime.newContext();
  context.unwrapResult(context.evalCode(`${harness}; JSON.stringify({ a: [1, "b"] })`)).dispose();
  context.dispose();
  runtime.dispose();
}

export function createSandboxHost(options: SandboxHostOptions): SandboxHost {
  const { timeoutMs } = options;
  // Made here, in the thread that runs the sandboxes: the clock is that thread's.
  const clock = options.cpuClock ?? threadCpuClock();
  const budget = (limitMs = timeoutMs) => createCpuBudget(clock, limitMs, { describedMs: timeoutMs });
  const sandboxes = new Map<string, Sandbox>();
  // Sandboxes being made: two calls of one key that both find none share one.
  const creating = new Map<string, Promise<Sandbox>>();
  const maxSandboxes = options.maxSandboxes ?? 100;
  // Thrown-away sandboxes whose memory grew, not collected yet.
  let grownDiscarded = 0;

  /**
   * Collects once a grown sandbox was thrown away. The thread keeps the
   * interpreter instance it made last reachable until it makes the next
   * (measured: a collection frees every thrown-away instance but that one),
   * so this runs after each new instance, and between calls only when an
   * older one is waiting too.
   */
  function collectIfDue(minimum: number) {
    if (grownDiscarded < minimum) return;
    grownDiscarded = minimum === 1 ? 0 : 1;
    options.collect?.();
  }

  function release(sandbox: Sandbox) {
    dispose(sandbox);
    if (grew(sandbox.instance)) grownDiscarded++;
  }

  function discard(key: string) {
    const sandbox = sandboxes.get(key);
    if (!sandbox) return;
    sandboxes.delete(key);
    release(sandbox);
  }

  async function newSandbox(source: string): Promise<Sandbox> {
    const instance = await newSandboxInstance(options.memoryMb);
    collectIfDue(1);
    const runtime = instance.module.newRuntime();
    runtime.setMemoryLimit(options.memoryMb * 1024 * 1024);
    runtime.setMaxStackSize(512 * 1024);
    const context = runtime.newContext();
    const sandbox: Sandbox = { instance, runtime, context, run: context.undefined };
    try {
      context.unwrapResult(context.evalCode(harness, "harness.js")).dispose();
      // The transform's top level runs once, under the same limits as a call.
      const time = budget();
      const loaded = guarded(runtime, time, () => context.evalCode(source, "transform.js"));
      if (loaded.timedOut || loaded.value.error) {
        const failure = loaded.timedOut ? timeoutFailure(time) : describe(sandbox, loaded.value.error!, time);
        loaded.value.error?.dispose();
        throw new SandboxError(failure.message, failure.failure);
      }
      loaded.value.value.dispose();
      sandbox.run = context.getProp(context.global, "__waypostRun");
    } catch (error) {
      release(sandbox);
      throw error;
    }
    return sandbox;
  }

  /** The key's sandbox, made on first use; calls that find it being made wait for that one. */
  function sandboxFor(key: string, source: string): Promise<Sandbox> {
    const existing = sandboxes.get(key);
    if (existing) {
      // Most recently used last: eviction takes the first.
      sandboxes.delete(key);
      sandboxes.set(key, existing);
      return Promise.resolve(existing);
    }
    let pending = creating.get(key);
    if (!pending) {
      pending = newSandbox(source).then((sandbox) => {
        if (sandboxes.size >= maxSandboxes) discard(sandboxes.keys().next().value!);
        sandboxes.set(key, sandbox);
        return sandbox;
      });
      creating.set(key, pending);
      void pending.then(
        () => creating.delete(key),
        () => creating.delete(key),
      );
    }
    return pending;
  }

  function timeoutFailure(time: CpuBudget): { message: string; failure: SandboxFailure } {
    return { message: time.overrun(), failure: "timeout" };
  }

  /** The call's result, read in the sandbox; a failure throws the sandbox away. */
  function callIn(key: string, sandbox: Sandbox, body: string, maxResultBytes: number, elapsed: () => number): TransformOutcome {
    const { context, runtime } = sandbox;
    const time = budget();
    const input = context.newString(body);
    const result = guarded(runtime, time, () => context.callFunction(sandbox.run, context.undefined, input));
    input.dispose();
    if (result.timedOut || result.value.error) {
      const failure = result.timedOut ? timeoutFailure(time) : describe(sandbox, result.value.error!, time);
      result.value.error?.dispose();
      discard(key);
      return { kind: "error", message: truncate(failure.message), elapsedMs: elapsed(), failure: failure.failure };
    }
    // A built-in that runs long natively (a big sort) is not interrupted; past the limit, the call failed all the same.
    if (time.spent()) {
      result.value.value.dispose();
      discard(key);
      const failure = timeoutFailure(time);
      return { kind: "error", message: failure.message, elapsedMs: elapsed(), failure: failure.failure };
    }
    const out = context.dump(result.value.value) as string | null;
    result.value.value.dispose();
    if (out === null) return { kind: "dropped", elapsedMs: elapsed() };
    const bytes = Buffer.byteLength(out);
    if (bytes > maxResultBytes) {
      return {
        kind: "error",
        message:
          maxResultBytes === sandboxLimits.maxResultBytes
            ? `the result is ${bytes} bytes, over the limit of ${sandboxLimits.maxResultBytes} bytes (32 KB) per call`
            : `the result is ${bytes} bytes, over the limit of ${maxResultBytes} bytes`,
        elapsedMs: elapsed(),
      };
    }
    return { kind: "send", body: out, elapsedMs: elapsed() };
  }

  let syntaxInstance: Promise<SandboxInstance> | undefined;

  return {
    async run(key, source, body, maxResultBytes = sandboxLimits.maxResultBytes) {
      const started = performance.now();
      const elapsed = () => performance.now() - started;
      try {
        let sandbox = await sandboxFor(key, source);
        // Thrown away while this call waited (another call of the key failed
        // first): made anew. Checked with no await before the call uses it.
        while (sandboxes.get(key) !== sandbox) sandbox = await sandboxFor(key, source);
        // The call's own time, without making the sandbox: the pool averages it to
        // decide when to put deliveries off, and a sandbox is made once, not per call.
        const ran = performance.now();
        return callIn(key, sandbox, body, maxResultBytes, () => performance.now() - ran);
      } catch (error) {
        // The transform's top level failed, or the interpreter itself gave up
        // (out of memory while reporting, say): nothing of it is kept.
        discard(key);
        const failure = error instanceof SandboxError ? error.failure : /memory/i.test(errorText(error)) ? "out_of_memory" : undefined;
        return { kind: "error", message: truncate(errorText(error)), elapsedMs: elapsed(), failure };
      }
    },
    async syntaxError(source) {
      syntaxInstance ??= newSandboxInstance(options.memoryMb);
      const { module } = await syntaxInstance;
      const runtime = module.newRuntime();
      runtime.setMemoryLimit(options.memoryMb * 1024 * 1024);
      const context = runtime.newContext();
      try {
        const compiled = guarded(runtime, budget(Math.max(timeoutMs, 1000)), () =>
          context.evalCode(source, "transform.js", { compileOnly: true }),
        );
        if (compiled.timedOut) return "took too long to compile";
        if (!compiled.value.error) {
          compiled.value.value.dispose();
          return undefined;
        }
        const message = describe({ runtime, context }, compiled.value.error, budget(describeMs)).message;
        compiled.value.error.dispose();
        return message;
      } catch (error) {
        syntaxInstance = undefined;
        return truncate(errorText(error));
      } finally {
        try {
          context.dispose();
          runtime.dispose();
        } catch {
          syntaxInstance = undefined;
        }
      }
    },
    forget: discard,
    afterCall: () => collectIfDue(2),
    close() {
      for (const key of [...sandboxes.keys()]) discard(key);
    },
  };

  /**
   * An error thrown inside the sandbox, as `Name: message (line N)`. Reading
   * it runs the error's getters (a `message` getter may loop), so it runs
   * under what is left of the call's time, or a few milliseconds past it.
   */
  function describe(
    sandbox: Pick<Sandbox, "runtime" | "context">,
    handle: QuickJSHandle,
    time: CpuBudget,
  ): { message: string; failure?: SandboxFailure } {
    const describing = time.atLeast(describeMs);
    const read = guarded(sandbox.runtime, describing, () => {
      try {
        return { dumped: sandbox.context.dump(handle) as unknown };
      } catch {
        return undefined;
      }
    });
    if (read.timedOut) return timeoutFailure(describing);
    if (!read.value) return { message: "ran out of memory", failure: "out_of_memory" };
    const dumped = read.value.dumped;
    if (dumped && typeof dumped === "object") {
      const error = dumped as { name?: unknown; message?: unknown; lineNumber?: unknown; stack?: unknown };
      const message = typeof error.message === "string" ? error.message : "";
      if (message === "out of memory") return { message: "ran out of memory", failure: "out_of_memory" };
      const line = typeof error.lineNumber === "number" ? error.lineNumber : lineFromStack(error.stack);
      const text = `${typeof error.name === "string" ? error.name : "Error"}: ${message}`;
      return { message: line !== undefined ? `${text} (line ${line})` : text };
    }
    if (dumped === null) return { message: "ran out of memory", failure: "out_of_memory" };
    return { message: `threw ${String(dumped)}` };
  }
}

/** Runs `work` with the interpreter interrupted once `time` is spent. */
function guarded<T>(runtime: QuickJSRuntime, time: CpuBudget, work: () => T): { value: T; timedOut: boolean } {
  let timedOut = false;
  runtime.setInterruptHandler(() => {
    timedOut ||= time.spent();
    return timedOut;
  });
  try {
    const value = work();
    return { value, timedOut };
  } finally {
    runtime.removeInterruptHandler();
  }
}

function lineFromStack(stack: unknown): number | undefined {
  const match = typeof stack === "string" ? stack.match(/transform\.js:(\d+)/) : null;
  return match ? Number(match[1]) : undefined;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function truncate(message: string): string {
  const limit = sandboxLimits.maxErrorBytes;
  return Buffer.byteLength(message) <= limit ? message : `${Buffer.from(message).subarray(0, limit).toString("utf8")}…`;
}

function dispose(sandbox: Sandbox): void {
  try {
    sandbox.run.dispose();
    sandbox.context.dispose();
    sandbox.runtime.dispose();
  } catch {
    // A runtime that ran out of memory may refuse to free cleanly; its whole instance goes with it either way.
  }
}
