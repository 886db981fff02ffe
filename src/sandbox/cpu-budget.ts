import { readFileSync } from "node:fs";

/** The time a transform call is charged: the CPU time of the thread running it, where the platform tells it. */
export interface CpuClock {
  /** What nowMs counts: this thread's CPU time, or (where no platform way is known) wall time. */
  readonly measures: "thread-cpu" | "wall";
  /** Milliseconds of the thread's CPU time (or wall time) from an arbitrary origin. */
  nowMs(): number;
}

/** Node 23.9+ (and later 22.x): getrusage(RUSAGE_THREAD) of the calling thread. */
type ThreadCpuUsage = () => { user: number; system: number };

/**
 * The CPU clock of the calling thread (the transform worker's): Node's
 * own per-thread usage where it has one, else Linux's
 * /proc/thread-self/schedstat (nanoseconds on a CPU of the thread that
 * reads it), else wall time. Process CPU time
 * (process.cpuUsage) would charge a transform for every other thread's work.
 */
export function threadCpuClock(): CpuClock {
  const usage = (process as unknown as { threadCpuUsage?: ThreadCpuUsage }).threadCpuUsage;
  if (typeof usage === "function") {
    return {
      measures: "thread-cpu",
      nowMs: () => {
        const { user, system } = usage.call(process);
        return (user + system) / 1000;
      },
    };
  }
  return schedstatClock() ?? { measures: "wall", nowMs: () => performance.now() };
}

function schedstatClock(): CpuClock | undefined {
  // Opened on each reading (about 40 µs), never kept: a worker thread ended
  // by the watchdog would leave an open descriptor behind. Read only when a
  // call's wall time says its CPU time may be spent (see createCpuBudget).
  const nowMs = () => Number(readFileSync("/proc/thread-self/schedstat", "latin1").split(" ", 1)[0]) / 1e6;
  try {
    return Number.isFinite(nowMs()) ? { measures: "thread-cpu", nowMs } : undefined;
  } catch {
    return undefined;
  }
}

/** A call's CPU time limit, with a wall-clock backstop so that a thread starved of CPU (or stuck) still ends. */
export interface CpuBudget {
  /** Whether the call used its CPU time or ran past the backstop; once true, stays true. */
  spent(): boolean;
  /** Why it was spent, as a transform's error says it. */
  overrun(): string;
  /** A budget of what is left of this one, or at least `minimumMs` more: to read a thrown error once the call's time is nearly spent. */
  atLeast(minimumMs: number): CpuBudget;
}

/**
 * The wall time after which a call ends whatever CPU it used: ten times
 * its CPU limit, and at least 5 s, so that only a thread getting under a
 * hundredth of a core at the default limit meets it (measured: on a
 * 2-core machine at a load of 25, a thread got about a fiftieth).
 */
export function wallBackstopMs(limitMs: number): number {
  return Math.max(10 * limitMs, 5_000);
}

/**
 * A budget of `limitMs` of CPU on `clock` from now. The thread's CPU time
 * cannot grow faster than wall time, so the clock is read only once wall
 * time since the last reading passed what was left: an interpreter
 * interrupt check (thousands a call) costs a performance.now().
 */
export function createCpuBudget(clock: CpuClock, limitMs: number, options: { backstopMs?: number; describedMs?: number } = {}): CpuBudget {
  const describedMs = options.describedMs ?? limitMs;
  const backstopMs = options.backstopMs ?? wallBackstopMs(Math.max(limitMs, describedMs));
  const startedWall = performance.now();
  const startedCpu = clock.nowMs();
  let nextReading = startedWall + limitMs;
  let reason: "cpu" | "wall" | undefined;
  const budget: CpuBudget = {
    spent() {
      if (reason) return true;
      const now = performance.now();
      if (now - startedWall > backstopMs) reason = "wall";
      else if (now >= nextReading) {
        const used = clock.nowMs() - startedCpu;
        if (used > limitMs) reason = "cpu";
        else nextReading = now + (limitMs - used);
      }
      return reason !== undefined;
    },
    overrun() {
      if (reason === "wall" || clock.measures === "wall") {
        return (
          `ran longer than ${describedMs} ms` +
          (clock.measures === "wall" ? "" : ` (${Math.round(backstopMs)} ms of wall time: the machine gave it too little CPU)`)
        );
      }
      return `ran longer than ${describedMs} ms of CPU time`;
    },
    atLeast(minimumMs) {
      const left = limitMs - (clock.nowMs() - startedCpu);
      const more = Math.max(left, minimumMs);
      return createCpuBudget(clock, more, { describedMs });
    },
  };
  return budget;
}
