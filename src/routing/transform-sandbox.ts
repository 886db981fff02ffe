import { Worker } from "node:worker_threads";
import type { TransformOutcome, TransformSandboxes, TransformSandboxOptions } from "./sandbox-host.js";
import type { WorkerRequest } from "./transform-worker.js";

export type { TransformOutcome, TransformSandboxes, TransformSandboxOptions } from "./sandbox-host.js";

/** How long past its time limit a call may go before its worker is ended. */
const graceMs = 1_000;

interface Pending {
  request: WorkerRequest;
  resolve: (result: unknown) => void;
}

/** Requests handed to the worker at once: it runs them one by one, without waiting for the main thread in between. */
const maxInFlight = 64;

/**
 * Destinations' transforms, run in a worker thread: the sandbox's own
 * limits stop a transform in almost every case, and when one overruns them
 * (a long native built-in) the worker is ended and started anew, failing
 * that call only. The main thread's event loop never runs transform code,
 * so ingest and the API stay responsive whatever a transform does.
 */
export function createTransformSandboxes(options: TransformSandboxOptions): TransformSandboxes {
  let worker: Worker | undefined;
  let nextId = 1;
  let closed = false;
  const queue: Pending[] = [];
  // Sent to the worker and not answered yet, oldest first: the worker
  // answers in order, so the oldest is the one running.
  const inFlight: Pending[] = [];
  let watchdog: NodeJS.Timeout | undefined;
  // Whether the current worker has loaded the interpreter (time limits start then).
  let ready = false;

  function start(): Worker {
    const started = new Worker(workerUrl(), { workerData: options });
    ready = false;
    started.unref();
    started.on("message", (message: { id: number; result: unknown; ready?: true }) => {
      if (message.ready) {
        ready = true;
        armWatchdog();
      } else finish(message.id, message.result);
    });
    started.on("error", () => restart("the transform worker failed"));
    started.on("exit", () => {
      if (worker === started) restart("the transform worker stopped");
    });
    return started;
  }

  /** The oldest call in flight has this long to answer, from when the one before it did. */
  function armWatchdog() {
    clearTimeout(watchdog);
    watchdog = undefined;
    const running = inFlight[0];
    if (!running || !ready) return;
    const limitMs = running.request.op === "run" ? options.timeoutMs + graceMs : Math.max(options.timeoutMs, 1000) + graceMs;
    watchdog = setTimeout(() => restart(`ran longer than ${options.timeoutMs} ms`), limitMs);
    watchdog.unref();
  }

  function finish(id: number, result: unknown) {
    const index = inFlight.findIndex((p) => p.request.id === id);
    if (index < 0) return;
    const [call] = inFlight.splice(index, 1);
    call!.resolve(result);
    armWatchdog();
    pump();
  }

  /** Ends the worker (and every sandbox in it); the call it was running fails, the rest go to a new one. */
  function restart(reason: string) {
    const stuck = inFlight.shift();
    const old = worker;
    worker = undefined;
    old?.removeAllListeners("exit");
    void old?.terminate();
    if (stuck) stuck.resolve(failure(stuck.request, reason));
    // The rest had not run: they go first to the new worker.
    queue.unshift(...inFlight.splice(0));
    armWatchdog();
    pump();
  }

  function pump() {
    if (closed) return;
    const wasIdle = inFlight.length === 0;
    while (queue.length > 0 && inFlight.length < maxInFlight) {
      const next = queue.shift()!;
      worker ??= start();
      inFlight.push(next);
      worker.postMessage(next.request);
    }
    if (wasIdle) armWatchdog();
  }

  function call<T>(request: WorkerRequest extends infer R ? (R extends WorkerRequest ? Omit<R, "id"> : never) : never): Promise<T> {
    if (closed) return Promise.reject(new Error("the transform sandboxes are closed"));
    const id = nextId++;
    return new Promise<T>((resolve) => {
      queue.push({ request: { ...request, id } as WorkerRequest, resolve: resolve as (r: unknown) => void });
      pump();
    });
  }

  return {
    run: (key, source, body) => call<TransformOutcome>({ op: "run", key, source, body }),
    syntaxError: (source) => call<string | undefined>({ op: "syntax", source }),
    forget: (key) => void call({ op: "forget", key }),
    close() {
      closed = true;
      clearTimeout(watchdog);
      for (const entry of [...inFlight.splice(0), ...queue.splice(0)])
        entry.resolve(failure(entry.request, "the transform sandboxes were closed"));
      void worker?.terminate();
      worker = undefined;
    },
  };
}

function failure(request: WorkerRequest, message: string): unknown {
  if (request.op === "run") return { kind: "error", message, elapsedMs: 0 } satisfies TransformOutcome;
  if (request.op === "syntax") return message;
  return undefined;
}

/**
 * The worker's compiled entry. Run from TypeScript sources (the tests), it
 * is the build's copy in dist/: a worker thread cannot load .ts itself.
 */
function workerUrl(): URL {
  const here = import.meta.url;
  if (here.endsWith(".ts")) return new URL(here.replace(/\/src\/routing\/transform-sandbox\.ts$/, "/dist/src/routing/transform-worker.js"));
  return new URL("./transform-worker.js", here);
}
