import { setTimeout as sleep } from "node:timers/promises";
import { expect, test } from "vitest";
import { createCpuBudget, threadCpuClock, wallBackstopMs, type CpuClock } from "../../src/sandbox/cpu-budget.js";

// A transform call is charged the CPU time of the thread running it, not
// the wall time a busy machine stretches it to, with a wall-clock
// backstop for a thread that gets no CPU at all.

const stopped: CpuClock = { measures: "thread-cpu", nowMs: () => 0 };

test("the thread's CPU clock stands still while the thread waits", async () => {
  const clock = threadCpuClock();
  // Linux (every supported deployment) and Node 22.19+ elsewhere tell a thread's CPU time.
  expect(clock.measures).toBe("thread-cpu");
  const before = clock.nowMs();
  await sleep(300);
  // Generous: the loop's own work while waiting is a few ms.
  expect(clock.nowMs() - before).toBeLessThan(150);
  const spinning = clock.nowMs();
  const wallStart = performance.now();
  while (clock.nowMs() - spinning < 20) {
    // Spins until the clock counts 20 ms of this thread's CPU.
  }
  expect(performance.now() - wallStart).toBeGreaterThanOrEqual(19);
});

test("a budget is spent once its CPU time is used, and says so", () => {
  const budget = createCpuBudget(threadCpuClock(), 20);
  expect(budget.spent()).toBe(false);
  while (!budget.spent()) {
    // Spins until 20 ms of CPU are used.
  }
  expect(budget.spent()).toBe(true);
  expect(budget.overrun()).toBe("ran longer than 20 ms of CPU time");
});

test("a thread given no CPU is ended by the wall-clock backstop", async () => {
  expect(wallBackstopMs(50)).toBe(5_000);
  expect(wallBackstopMs(1_000)).toBe(10_000);
  const budget = createCpuBudget(stopped, 10, { backstopMs: 100 });
  const started = performance.now();
  while (!budget.spent()) await sleep(5);
  expect(performance.now() - started).toBeGreaterThanOrEqual(100);
  expect(budget.overrun()).toBe("ran longer than 10 ms (100 ms of wall time: the machine gave it too little CPU)");
});

test("reading a thrown error gets what is left of the call's time, or a few ms more", async () => {
  // A hand-turned clock; the waits keep it behind wall time, as a thread's CPU time always is.
  let cpu = 0;
  const clock: CpuClock = { measures: "thread-cpu", nowMs: () => cpu };
  const budget = createCpuBudget(clock, 50);
  cpu = 49;
  const describing = budget.atLeast(10);
  await sleep(15);
  cpu = 58;
  expect(describing.spent()).toBe(false);
  await sleep(5);
  cpu = 60;
  expect(describing.spent()).toBe(true);
  expect(describing.overrun()).toBe("ran longer than 50 ms of CPU time");
});
