import { Worker } from "node:worker_threads";
import { workerUrl } from "../sandbox/worker-entry.js";
import { defaultInferenceLimits, type InferenceLimits } from "./infer-plan.js";
import type { InferenceAnswer, InferenceRequest } from "./inference-worker.js";
import type { PlanDocument } from "./plan-document.js";

/** Most heap of an inference's worker thread: its data is bounded by the inference limits, a page of bodies and the plan. */
export const inferenceHeapMb = 256;

/** The inference's worker ran out of its heap: what the API answers resource_exhausted. */
export class InferenceMemoryError extends Error {}

/** An inference run in a worker thread of its own (see startInferenceThread). */
export interface InferenceThread {
  /** Hands the thread a page of stored call bodies; resolves once it has taken them in. */
  add(bodies: string[]): Promise<void>;
  /** The plan of everything added. */
  plan(name: string): Promise<PlanDocument>;
  /** Ends the thread (done, or given up). */
  close(): Promise<void>;
}

/**
 * Starts a worker thread running createPlanInference: parsing thousands of
 * stored bodies of up to 32 KB takes seconds of CPU, which on the main
 * thread would hold up every request the process serves meanwhile. Its
 * heap is capped; past it the inference fails, the process does not.
 */
export function startInferenceThread(limits: InferenceLimits = defaultInferenceLimits, heapMb = inferenceHeapMb): InferenceThread {
  const worker = new Worker(workerUrl("inference-worker", import.meta.url), {
    workerData: limits,
    resourceLimits: { maxOldGenerationSizeMb: heapMb },
  });
  const waiting: Array<{ resolve: (answer: InferenceAnswer) => void; reject: (error: Error) => void }> = [];
  let failure: Error | undefined;

  function fail(error: Error) {
    failure ??= error;
    for (const pending of waiting.splice(0)) pending.reject(failure);
  }
  worker.on("message", (answer: InferenceAnswer) => waiting.shift()?.resolve(answer));
  worker.on("error", (error: Error & { code?: string }) => {
    fail(
      error.code === "ERR_WORKER_OUT_OF_MEMORY"
        ? new InferenceMemoryError(`inference ran out of its ${heapMb} MB of memory; infer from a shorter time (since)`)
        : error,
    );
  });
  worker.on("exit", () => fail(new Error("the inference worker stopped")));

  function ask(request: InferenceRequest): Promise<InferenceAnswer> {
    if (failure) return Promise.reject(failure);
    return new Promise((resolve, reject) => {
      waiting.push({ resolve, reject });
      worker.postMessage(request);
    });
  }

  return {
    async add(bodies) {
      await ask({ op: "add", bodies });
    },
    async plan(name) {
      return ((await ask({ op: "plan", name })) as { plan: PlanDocument }).plan;
    },
    async close() {
      await worker.terminate();
    },
  };
}
