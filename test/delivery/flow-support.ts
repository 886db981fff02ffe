import { performance } from "node:perf_hooks";
import { startServiceProcess, type ServiceProcess } from "../helpers/process.js";
import { startReceiver, type ReceivedRequest, type Receiver, type ResponsePlan } from "../helpers/receiver.js";

/** A request as the receiver saw it, with its arrival time (ms, monotonic). */
export interface Arrival {
  at: number;
  body: Record<string, unknown>;
}

export interface TimedReceiver {
  receiver: Receiver;
  arrivals: Arrival[];
}

/** A real receiver that timestamps every arrival; `respond` may delay or fail some. */
export async function startTimedReceiver(
  respond: (body: Record<string, unknown>, request: ReceivedRequest) => ResponsePlan = () => ({ status: 200 }),
): Promise<TimedReceiver> {
  const arrivals: Arrival[] = [];
  const receiver = await startReceiver({
    respond(request) {
      const body = JSON.parse(request.body) as Record<string, unknown>;
      arrivals.push({ at: performance.now(), body });
      return respond(body, request);
    },
  });
  return { receiver, arrivals };
}

/** The most arrivals in any window of `windowMs` (windows start at an arrival, which is where the maximum is). */
export function maxInWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  let end = 0;
  for (let start = 0; start < sorted.length; start++) {
    while (end < sorted.length && sorted[end]! < sorted[start]! + windowMs) end++;
    best = Math.max(best, end - start);
  }
  return best;
}

/** Worker-role service processes on one database, killed by `stopAll`. */
export function createWorkerPool(databaseUrl: () => string) {
  const processes: ServiceProcess[] = [];
  return {
    async start(env: Record<string, string> = {}): Promise<ServiceProcess> {
      const p = await startServiceProcess(databaseUrl(), { WAYPOST_ROLE: "worker", ...env });
      processes.push(p);
      return p;
    },
    async stopAll(): Promise<void> {
      for (const p of processes.splice(0)) {
        if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
        await p.exited;
      }
    },
  };
}

/** Requests one worker process sent, from its own /metrics. */
export async function attemptsBy(p: ServiceProcess): Promise<number> {
  const text = await (await fetch(`${p.url}/metrics`)).text();
  return [...text.matchAll(/waypost_delivery_attempts_total\{[^}]*\} (\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
}
