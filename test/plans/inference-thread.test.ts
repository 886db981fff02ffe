import { expect, test } from "vitest";
import { defaultInferenceLimits, inferPlan } from "../../src/plans/infer-plan.js";
import { InferenceMemoryError, startInferenceThread } from "../../src/plans/inference-thread.js";

// The inference's worker thread: the same plan as inferring on the main
// thread, and a heap of its own whose overrun fails the inference only.

const call = (event: string, properties: Record<string, unknown>) => JSON.stringify({ type: "track", event, properties });

test("the worker's plan is the one inferred on the main thread", async () => {
  const bodies = [call("Paid", { total: 3, plan: "pro" }), call("Paid", { total: "4" }), "not json", call("Left", {})];
  const thread = startInferenceThread();
  try {
    await thread.add(bodies.slice(0, 2));
    await thread.add(bodies.slice(2));
    expect(await thread.plan("test")).toEqual(inferPlan(bodies, "test"));
  } finally {
    await thread.close();
  }
});

test("past its heap the inference fails with a memory error, and the process goes on", async () => {
  // Every key kept (limits raised): a heap of 16 MB cannot hold a million of them.
  const limits = { ...defaultInferenceLimits, maxKeysPerObject: 1e7, maxKeys: 1e7 };
  const thread = startInferenceThread(limits, 16);
  try {
    const wide = (page: number) =>
      Array.from({ length: 10 }, (_, i) =>
        call("Wide", Object.fromEntries(Array.from({ length: 10_000 }, (_, j) => [`k${page}_${i}_${j}`, j]))),
      );
    const adding = (async () => {
      for (let page = 0; page < 100; page++) await thread.add(wide(page));
    })();
    await expect(adding).rejects.toBeInstanceOf(InferenceMemoryError);
    await expect(thread.plan("after")).rejects.toThrow(/ran out of its 16 MB of memory/);
  } finally {
    await thread.close();
  }
}, 120_000);
