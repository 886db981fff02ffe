import { parentPort, workerData } from "node:worker_threads";
import { createSandboxHost, warmUpSandboxes, type TransformSandboxOptions } from "./sandbox-host.js";

/** A request from the main thread, answered with the same id. */
export type WorkerRequest =
  | { id: number; op: "run"; key: string; source: string; body: string }
  | { id: number; op: "syntax"; source: string }
  | { id: number; op: "forget"; key: string };

// The worker thread's entry: it holds every destination's sandbox and runs
// one call at a time. Started only by transform-sandbox.ts.
if (parentPort) {
  const port = parentPort;
  const host = createSandboxHost(workerData as TransformSandboxOptions);
  // Loading the interpreter takes a while on a busy machine: the main thread
  // starts its time limits only once this says the worker is ready.
  void warmUpSandboxes().then(() => port.postMessage({ ready: true }));
  port.on("message", async (request: WorkerRequest) => {
    if (request.op === "run") port.postMessage({ id: request.id, result: await host.run(request.key, request.source, request.body) });
    else if (request.op === "syntax") port.postMessage({ id: request.id, result: await host.syntaxError(request.source) });
    else {
      host.forget(request.key);
      port.postMessage({ id: request.id, result: undefined });
    }
  });
}
