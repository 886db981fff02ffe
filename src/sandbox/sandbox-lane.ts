import { Worker } from "node:worker_threads";
import { wallBackstopMs } from "./cpu-budget.js";
import type { SandboxFailure, SandboxHostOptions, TransformOutcome } from "./sandbox-host.js";
import type { WorkerMessage, WorkerRequest } from "./transform-worker.js";
import { transformWorkerUrl } from "./worker-entry.js";

/** A request as the main thread holds it until it is answered. */
export interface LaneCall {
  request: Exclude<WorkerRequest, { op: "forget" }>;
  resolve: (result: unknown) => void;
  /** Workers that ended under it before it could run. */
  restarts: number;
}

export interface SandboxLaneOptions {
  host: SandboxHostOptions;
  /** How long past its time limit a call may go before its worker is ended. */
  graceMs: number;
  /** Calls handed back unrun when the worker ended: they go to a worker again. */
  requeue: (calls: LaneCall[]) => void;
  /** A call was answered (or failed here), and the lane has room again. */
  answered: (call: LaneCall, result: unknown) => void;
}

/** One worker thread and the calls sent to it: see createSandboxLane. */
export interface SandboxLane {
  send(call: LaneCall): void;
  /** Frees `key`'s sandbox in this worker, if it has one. Not answered. */
  forget(key: string): void;
  /** Sent and not answered, oldest first: the oldest is the one running. */
  readonly inFlight: readonly LaneCall[];
  close(): void;
}

/** Starts after a worker failed to start this many times under one call fail it. */
const maxRestarts = 3;

/**
 * A worker thread running sandboxes, seen from the main thread. The
 * worker runs its requests one at a time in the order sent, so the oldest
 * unanswered call is the running one, from when the one before it was
 * answered (or the worker became ready). The sandbox's own limits stop a
 * transform in almost every case; when one overruns them (a long native
 * built-in) the watchdog ends the worker: only that call fails, and the
 * calls behind it, which did not run, go to a worker again.
 */
export function createSandboxLane(options: SandboxLaneOptions): SandboxLane {
  const { host, graceMs } = options;
  let worker: Worker | undefined;
  let ready = false;
  let nextId = 1;
  let closed = false;
  const inFlight: LaneCall[] = [];
  let watchdog: NodeJS.Timeout | undefined;

  function start(): Worker {
    const started = new Worker(transformWorkerUrl(), { workerData: host });
    ready = false;
    started.unref();
    started.on("message", (message: WorkerMessage) => {
      if (worker !== started) return;
      if ("ready" in message) {
        ready = true;
        armWatchdog();
      } else finish(message.id, message.result);
    });
    started.on("error", (error) => {
      if (worker === started) ended(`the transform worker failed: ${error.message}`);
    });
    started.on("exit", () => {
      if (worker === started) ended("the transform worker stopped");
    });
    return started;
  }

  /**
   * Wall time: past the worker's own wall-clock backstops, as a run may
   * make its sandbox (the top level runs under the limit too) and then
   * read a thrown error.
   */
  function limitOf(call: LaneCall): number {
    const backstopMs = wallBackstopMs(host.timeoutMs);
    return call.request.op === "run" ? 2 * backstopMs + graceMs : wallBackstopMs(Math.max(host.timeoutMs, 1000)) + graceMs;
  }

  /** The oldest call in flight has its limit, from when the one before it was answered. */
  function armWatchdog() {
    clearTimeout(watchdog);
    watchdog = undefined;
    const running = inFlight[0];
    if (!running || !ready) return;
    watchdog = setTimeout(() => overran(running), limitOf(running));
    watchdog.unref();
  }

  function finish(id: number, result: unknown) {
    const index = inFlight.findIndex((c) => c.request.id === id);
    if (index < 0) return;
    const [call] = inFlight.splice(index, 1);
    armWatchdog();
    options.answered(call!, result);
  }

  function stopWorker() {
    clearTimeout(watchdog);
    watchdog = undefined;
    const old = worker;
    worker = undefined;
    ready = false;
    void old?.terminate();
  }

  /** The running call ran past its limit inside the interpreter: it fails, nothing else does. */
  function overran(running: LaneCall) {
    if (inFlight[0] !== running) return;
    stopWorker();
    inFlight.shift();
    const rest = inFlight.splice(0);
    const message = `ran longer than ${limitOf(running)} ms of wall time without returning (its limit is ${host.timeoutMs} ms of CPU time)`;
    options.answered(running, failure(running, message, "timeout"));
    if (rest.length > 0) options.requeue(rest);
  }

  /** The worker ended by itself: the running call fails; if it never got ready, nothing ran. */
  function ended(reason: string) {
    const wasReady = ready;
    stopWorker();
    const calls = inFlight.splice(0);
    const running = wasReady ? calls.shift() : undefined;
    if (running) {
      options.answered(running, failure(running, reason, "worker_ended"));
    }
    const again: LaneCall[] = [];
    for (const call of calls) {
      call.restarts += 1;
      if (call.restarts < maxRestarts) again.push(call);
      else options.answered(call, failure(call, reason, "worker_ended"));
    }
    if (again.length > 0) options.requeue(again);
  }

  return {
    inFlight,
    send(call) {
      if (closed) {
        options.answered(call, failure(call, "the transform sandboxes are closed"));
        return;
      }
      worker ??= start();
      call.request = { ...call.request, id: nextId++ };
      inFlight.push(call);
      worker.postMessage(call.request);
      if (inFlight.length === 1) armWatchdog();
    },
    forget(key) {
      worker?.postMessage({ id: 0, op: "forget", key } satisfies WorkerRequest);
    },
    close() {
      closed = true;
      stopWorker();
      for (const call of inFlight.splice(0)) call.resolve(failure(call, "the transform sandboxes were closed"));
    },
  };
}

/** What a call that could not be answered by its worker resolves to. */
export function failure(call: LaneCall, message: string, cause?: SandboxFailure): unknown {
  if (call.request.op === "run") return { kind: "error", message, elapsedMs: 0, failure: cause } satisfies TransformOutcome;
  return message;
}
