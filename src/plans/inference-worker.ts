import { parentPort, workerData } from "node:worker_threads";
import { createPlanInference, type InferenceLimits } from "./infer-plan.js";

/** A request from the main thread (inference-thread.ts), answered in order. */
export type InferenceRequest = { op: "add"; bodies: string[] } | { op: "plan"; name: string };

/** What the worker posts back: a page taken in, or the plan. */
export type InferenceAnswer = { added: number } | { plan: unknown };

// The inference worker thread's entry: it parses the stored calls' bodies
// and keeps what they hold, so that the main thread's event loop (ingest,
// every RPC) never waits behind a page of JSON.parse. Started only by
// inference-thread.ts.
if (parentPort) {
  const port = parentPort;
  const inference = createPlanInference(workerData as InferenceLimits);
  port.on("message", (request: InferenceRequest) => {
    if (request.op === "add") {
      for (const body of request.bodies) inference.add(body);
      port.postMessage({ added: request.bodies.length } satisfies InferenceAnswer);
    } else {
      port.postMessage({ plan: inference.plan(request.name) } satisfies InferenceAnswer);
    }
  });
}
