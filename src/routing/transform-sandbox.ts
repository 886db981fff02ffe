import { Worker } from "node:worker_threads";
import type { TransformOutcome, TransformSandboxes, TransformSandboxOptions } from "./sandbox-host.js";
import type { WorkerRequest } from "./transform-worker.js";

export type { TransformOutcome, TransformSandboxes, TransformSandboxOptions } from "./sandbox-host.js";

/** How long past its time limit a call may go before its worker is ended. */
const graceMs = 1_000;

interface Pending {
  request: WorkerRequest;
  resolve: (result: unknown) => void;
  timer?: NodeJS.Timeout;
}

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
  const pending = new Map<number, Pending>();
  // One call in the worker at a time, so a deadline is that call's own.
  const queue: Pending[] = [];
  let current: Pending | undefined;

  function start(): Worker {
    const started = new Worker(workerUrl(), { workerData: options });
    started.unref();
    started.on("message", (message: { id: number; result: unknown }) => finish(message.id, message.result));
    started.on("error", () => restart("the transform worker failed"));
    started.on("exit", () => {
      if (worker === started) restart("the transform worker stopped");
    });
    return started;
  }

  function finish(id: number, result: unknown) {
    const call = pending.get(id);
    if (!call) return;
    pending.delete(id);
    clearTimeout(call.timer);
    if (current === call) current = undefined;
    call.resolve(result);
    pump();
  }

  /** Ends the worker (and every sandbox in it); the call it was running fails, the rest go to a new one. */
  function restart(reason: string) {
    const stuck = current;
    current = undefined;
    const old = worker;
    worker = undefined;
    old?.removeAllListeners("exit");
    void old?.terminate();
    if (stuck) {
      pending.delete(stuck.request.id);
      stuck.resolve(failure(stuck.request, reason));
    }
    pump();
  }

  function pump() {
    if (current || closed) return;
    const next = queue.shift();
    if (!next) return;
    current = next;
    worker ??= start();
    if (next.request.op === "run") {
      next.timer = setTimeout(() => restart(`ran longer than ${options.timeoutMs} ms`), options.timeoutMs + graceMs);
    }
    worker.postMessage(next.request);
  }

  function call<T>(request: WorkerRequest extends infer R ? (R extends WorkerRequest ? Omit<R, "id"> : never) : never): Promise<T> {
    if (closed) return Promise.reject(new Error("the transform sandboxes are closed"));
    const id = nextId++;
    return new Promise<T>((resolve) => {
      const entry: Pending = { request: { ...request, id } as WorkerRequest, resolve: resolve as (r: unknown) => void };
      pending.set(id, entry);
      queue.push(entry);
      pump();
    });
  }

  return {
    run: (key, source, body) => call<TransformOutcome>({ op: "run", key, source, body }),
    syntaxError: (source) => call<string | undefined>({ op: "syntax", source }),
    forget: (key) => void call({ op: "forget", key }),
    close() {
      closed = true;
      for (const entry of pending.values()) {
        clearTimeout(entry.timer);
        entry.resolve(failure(entry.request, "the transform sandboxes were closed"));
      }
      pending.clear();
      queue.length = 0;
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
