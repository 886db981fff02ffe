import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { parentPort, workerData } from "node:worker_threads";
import { createSandboxHost, warmUpSandboxes, type SandboxHostOptions } from "./sandbox-host.js";

/** A request from the main thread, answered with the same id (a forget is not answered). */
export type WorkerRequest =
  | { id: number; op: "run"; key: string; source: string; body: string; maxResultBytes?: number }
  | { id: number; op: "syntax"; source: string }
  | { id: number; op: "forget"; key: string };

/** What the worker posts: that it is ready, or a request's result. */
export type WorkerMessage = { ready: true } | { id: number; result: unknown };

/**
 * A full collection of this thread's heap (small: the sandboxes' memories
 * are outside it), so a discarded sandbox's memory is returned at once.
 * Workers cannot be started with --expose-gc; the flag set here reaches
 * contexts made after it, like this one.
 */
function collector(): () => void {
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as () => void;
}

// The worker thread's entry: it holds the sandboxes of the destinations
// the main thread sends it and runs one request at a time, strictly in the
// order they came, so the main thread always knows which one is running:
// the oldest it has not had an answer for. Started only by sandbox-lane.ts.
if (parentPort) {
  const port = parentPort;
  const options = workerData as SandboxHostOptions;
  const host = createSandboxHost({ ...options, collect: collector() });
  const queue: WorkerRequest[] = [];
  let draining = false;

  async function answer(request: WorkerRequest): Promise<void> {
    if (request.op === "forget") return host.forget(request.key);
    const result =
      request.op === "run"
        ? await host.run(request.key, request.source, request.body, request.maxResultBytes)
        : await host.syntaxError(request.source);
    port.postMessage({ id: request.id, result } satisfies WorkerMessage);
  }

  async function drain() {
    // Loading the interpreter takes a while on a busy machine: the main
    // thread starts its time limits only once this says the worker is ready.
    while (queue.length > 0) {
      await answer(queue.shift()!);
      host.afterCall();
    }
    draining = false;
  }

  const ready = warmUpSandboxes(options.memoryMb).then(() => port.postMessage({ ready: true } satisfies WorkerMessage));
  port.on("message", (request: WorkerRequest) => {
    queue.push(request);
    if (draining) return;
    draining = true;
    void ready.then(drain);
  });
}
