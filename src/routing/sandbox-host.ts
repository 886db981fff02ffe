import releaseSync from "@jitl/quickjs-wasmfile-release-sync";
import {
  newQuickJSWASMModuleFromVariant,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
} from "quickjs-emscripten-core";
import { routingLimits } from "./filter-limits.js";

/** What a transform made of one body. */
export type TransformOutcome =
  | { kind: "send"; body: string; elapsedMs: number }
  | { kind: "dropped"; elapsedMs: number }
  | { kind: "error"; message: string; elapsedMs: number };

export interface TransformSandboxOptions {
  /** Most time one call may run (WAYPOST_TRANSFORM_TIMEOUT_MS). */
  timeoutMs: number;
  /** Most memory one destination's sandbox may hold (WAYPOST_TRANSFORM_MEMORY_MB). */
  memoryMb: number;
  /** Sandboxes kept (one per destination and settings revision); past it the oldest goes. */
  maxSandboxes?: number;
}

/**
 * The sandboxes themselves, in the thread that runs them. QuickJS checks
 * its interrupt handler only between bytecode operations, so a built-in
 * that runs long natively (filling a huge array near the memory limit)
 * can overrun the limit: this host runs in a worker thread
 * (transform-worker.ts), which the main thread can always end.
 */
export interface TransformSandboxes {
  /**
   * Runs `source`'s transform over `body` in the sandbox kept for `key` (a
   * destination and its settings revision), creating it on first use. A
   * failure leaves the host untouched; the sandbox is thrown away and made
   * anew on the next call, so one bad call cannot poison the next.
   */
  run(key: string, source: string, body: string): Promise<TransformOutcome>;
  /** A syntax error in `source` with its line, or undefined. Compiles only: runs nothing. */
  syntaxError(source: string): Promise<string | undefined>;
  /** Frees the sandbox kept for `key` (a test run's). */
  forget(key: string): void;
  close(): void;
}

interface Sandbox {
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

let modulePromise: Promise<QuickJSWASMModule> | undefined;

/** Loads and warms the interpreter, so that no call's time limit pays for it. */
export async function warmUpSandboxes(): Promise<void> {
  await quickjs();
}

/** The WebAssembly QuickJS module, loaded once per process on first use. */
function quickjs(): Promise<QuickJSWASMModule> {
  modulePromise ??= newQuickJSWASMModuleFromVariant(releaseSync as unknown as QuickJSSyncVariant).then((module) => {
    // The first evaluation in a process is many times slower than the next
    // (the WebAssembly code warms up); done here, it counts against no transform.
    const runtime = module.newRuntime();
    const context = runtime.newContext();
    context.unwrapResult(context.evalCode(`${harness}; JSON.stringify({ a: [1, "b"] })`)).dispose();
    context.dispose();
    runtime.dispose();
    return module;
  });
  return modulePromise;
}

export function createSandboxHost(options: TransformSandboxOptions): TransformSandboxes {
  const sandboxes = new Map<string, Sandbox>();
  const maxSandboxes = options.maxSandboxes ?? 200;

  function discard(key: string) {
    const sandbox = sandboxes.get(key);
    if (!sandbox) return;
    sandboxes.delete(key);
    dispose(sandbox);
  }

  async function sandboxFor(key: string, source: string): Promise<Sandbox> {
    const existing = sandboxes.get(key);
    if (existing) return existing;
    const module = await quickjs();
    const runtime = module.newRuntime();
    runtime.setMemoryLimit(options.memoryMb * 1024 * 1024);
    runtime.setMaxStackSize(512 * 1024);
    const context = runtime.newContext();
    const sandbox: Sandbox = { runtime, context, run: context.undefined };
    try {
      context.unwrapResult(context.evalCode(harness, "harness.js")).dispose();
      // The transform's top level runs once, under the same limits as a call.
      const loaded = withDeadline(runtime, options.timeoutMs, () => context.evalCode(source, "transform.js"));
      if (loaded.error) {
        const message = describe(context, loaded.error);
        loaded.error.dispose();
        throw new TransformError(message);
      }
      loaded.value.dispose();
      sandbox.run = context.getProp(context.global, "__waypostRun");
    } catch (error) {
      dispose(sandbox);
      throw error;
    }
    if (sandboxes.size >= maxSandboxes) discard(sandboxes.keys().next().value!);
    sandboxes.set(key, sandbox);
    return sandbox;
  }

  return {
    async run(key, source, body) {
      const started = performance.now();
      const elapsed = () => performance.now() - started;
      let sandbox: Sandbox;
      try {
        sandbox = await sandboxFor(key, source);
      } catch (error) {
        return { kind: "error", message: truncate(errorText(error)), elapsedMs: elapsed() };
      }
      const { context, runtime } = sandbox;
      try {
        const input = context.newString(body);
        const result = withDeadline(runtime, options.timeoutMs, () => context.callFunction(sandbox.run, context.undefined, input));
        input.dispose();
        if (result.error) {
          const message = describe(context, result.error);
          result.error.dispose();
          discard(key);
          return { kind: "error", message: truncate(message), elapsedMs: elapsed() };
        }
        const out = context.dump(result.value) as string | null;
        result.value.dispose();
        if (out === null) return { kind: "dropped", elapsedMs: elapsed() };
        const bytes = Buffer.byteLength(out);
        if (bytes > routingLimits.maxBodyBytes) {
          return {
            kind: "error",
            message: `the result is ${bytes} bytes, over the limit of ${routingLimits.maxBodyBytes} bytes (32 KB) per call`,
            elapsedMs: elapsed(),
          };
        }
        return { kind: "send", body: out, elapsedMs: elapsed() };
      } catch (error) {
        // The interpreter itself gave up (out of memory while reporting, say).
        discard(key);
        return { kind: "error", message: truncate(errorText(error)), elapsedMs: elapsed() };
      }
    },
    async syntaxError(source) {
      const module = await quickjs();
      const runtime = module.newRuntime();
      runtime.setMemoryLimit(options.memoryMb * 1024 * 1024);
      const context = runtime.newContext();
      try {
        const compiled = withDeadline(runtime, Math.max(options.timeoutMs, 1000), () =>
          context.evalCode(source, "transform.js", { compileOnly: true }),
        );
        if (!compiled.error) {
          compiled.value.dispose();
          return undefined;
        }
        const message = describe(context, compiled.error);
        compiled.error.dispose();
        return message;
      } finally {
        context.dispose();
        runtime.dispose();
      }
    },
    forget: discard,
    close() {
      for (const key of [...sandboxes.keys()]) discard(key);
    },
  };
}

class TransformError extends Error {}

function withDeadline<T>(runtime: QuickJSRuntime, timeoutMs: number, work: () => T): T {
  const deadline = performance.now() + timeoutMs;
  let timedOut = false;
  runtime.setInterruptHandler(() => {
    if (performance.now() > deadline) timedOut = true;
    return timedOut;
  });
  try {
    return work();
  } finally {
    runtime.removeInterruptHandler();
    if (timedOut) lastTimeout.set(runtime, timeoutMs);
  }
}

const lastTimeout = new WeakMap<QuickJSRuntime, number>();

/** An error thrown inside the sandbox, as `Name: message (line N)`. */
function describe(context: QuickJSContext, handle: QuickJSHandle): string {
  const timeout = lastTimeout.get(context.runtime);
  lastTimeout.delete(context.runtime);
  let dumped: unknown;
  try {
    dumped = context.dump(handle);
  } catch {
    dumped = undefined;
  }
  if (timeout !== undefined) return `ran longer than ${timeout} ms`;
  if (dumped && typeof dumped === "object") {
    const error = dumped as { name?: string; message?: string; lineNumber?: number; stack?: string };
    const line = error.lineNumber ?? lineFromStack(error.stack);
    const text = `${error.name ?? "Error"}: ${error.message ?? ""}`;
    if (error.message === "out of memory") return "ran out of memory";
    return line !== undefined ? `${text} (line ${line})` : text;
  }
  if (dumped === null) return "ran out of memory";
  return `threw ${String(dumped)}`;
}

function lineFromStack(stack: string | undefined): number | undefined {
  const match = stack?.match(/transform\.js:(\d+)/);
  return match ? Number(match[1]) : undefined;
}

function errorText(error: unknown): string {
  if (error instanceof TransformError) return error.message;
  return error instanceof Error ? error.message : String(error);
}

function truncate(message: string): string {
  const limit = routingLimits.maxTransformErrorBytes;
  return Buffer.byteLength(message) <= limit ? message : `${Buffer.from(message).subarray(0, limit).toString("utf8")}…`;
}

function dispose(sandbox: Sandbox): void {
  try {
    sandbox.run.dispose();
    sandbox.context.dispose();
    sandbox.runtime.dispose();
  } catch {
    // A runtime that ran out of memory may refuse to free cleanly; it is unreachable either way.
  }
}
