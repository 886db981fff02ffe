import { availableParallelism } from "node:os";
import type { SandboxFailure, TransformOutcome } from "./sandbox-host.js";
import { createSandboxLane, failure, type LaneCall, type SandboxLane } from "./sandbox-lane.js";

export type { SandboxFailure, TransformOutcome } from "./sandbox-host.js";

export interface TransformSandboxOptions {
  /** Most time one call may run (WAYPOST_TRANSFORM_TIMEOUT_MS). */
  timeoutMs: number;
  /** Most memory one destination's sandbox may hold (WAYPOST_TRANSFORM_MEMORY_MB). */
  memoryMb: number;
  /** Worker threads running sandboxes (WAYPOST_TRANSFORM_WORKERS; default: the machine's parallelism). */
  workers?: number;
  /** Sandboxes one worker keeps; past it its least recently used goes. */
  maxSandboxesPerWorker?: number;
  /** A sandbox unused this long is freed. */
  idleMs?: number;
  /** How long past its time limit a call may go before its worker is ended. */
  graceMs?: number;
  /** A sandbox failed a call (ran out of time or memory, or its worker ended): for /metrics. */
  onFailure?: (key: string, failure: SandboxFailure) => void;
}

export interface RunOptions {
  /**
   * The caller can put the call off (a delivery, handed back for later):
   * answered `busy` at once, rather than queued, when the key already has
   * more waiting than its sandbox can run within maxQueueWaitMs.
   */
  mayDefer?: boolean;
  /** Most bytes of the result (a destination's: the 32 KB call limit; a webhook source's transform returns several calls). */
  maxResultBytes?: number;
}

export interface TransformSandboxes {
  /** Runs `source`'s transform over `body` in the sandbox of `key` (see sandboxKey). */
  run(key: string, source: string, body: string, options?: RunOptions): Promise<TransformOutcome>;
  /** A syntax error in `source` with its line, or undefined; in a lane of its own, never behind deliveries. */
  syntaxError(source: string): Promise<string | undefined>;
  /** Frees the sandbox of `key` once its calls are done (a test run's). */
  forget(key: string): void;
  /** Frees every sandbox of the destination once its calls are done (it was deleted). */
  forgetDestination(destinationId: string): void;
  close(): void;
}

/** The sandbox key of a destination's settings revision: a new revision gets a new sandbox and frees the old. */
export function sandboxKey(destinationId: string, revision: number): string {
  return `${destinationId}:${revision}`;
}

/** A key's destination, when it is one (test runs' keys are not). */
export function destinationOf(key: string): string | undefined {
  return revisionOf(key)?.destinationId;
}

function revisionOf(key: string): { destinationId: string; revision: number } | undefined {
  const match = /^([0-9a-f-]{36}):(\d+)$/.exec(key);
  return match ? { destinationId: match[1]!, revision: Number(match[2]) } : undefined;
}

/** How long a delivery may expect to wait for its key's sandbox before it is put off instead. */
export const maxQueueWaitMs = 1_000;
/** Calls sent to one worker ahead of time: only while what it holds is expected to take less than pipelineBudgetMs. */
const maxPipeline = 32;
const pipelineBudgetMs = 5;

interface KeyState {
  key: string;
  pending: LaneCall[];
  /** The worker holding this key's sandbox: its calls go there while it has any in flight. */
  lane: LaneState | undefined;
  inFlight: number;
  /** Time per call, averaged; undefined until the first answer. */
  avgMs: number | undefined;
  lastUsedAt: number;
  forgotten: boolean;
}

interface LaneState {
  lane: SandboxLane;
  /** What the calls in flight there are expected to take. */
  expectedMs: number;
}

/**
 * Destinations' transforms, in a pool of worker threads (sandbox-lane.ts)
 * sized to the machine. Each key's sandbox lives in one worker at a time;
 * a key waiting while its worker is busy with another key moves to an idle
 * worker (its sandbox is made anew there). Workers take keys in turn, one
 * call at a time (several only while they are quick), so one slow
 * transform holds at most one worker and its turns, never the queue ahead
 * of the others. Syntax checks have a worker of their own. The main
 * thread's event loop never runs transform code.
 */
export function createTransformSandboxes(options: TransformSandboxOptions): TransformSandboxes {
  const workers = Math.max(1, options.workers ?? availableParallelism());
  const idleMs = options.idleMs ?? 60_000;
  const host = {
    timeoutMs: options.timeoutMs,
    memoryMb: options.memoryMb,
    maxSandboxes: options.maxSandboxesPerWorker ?? 100,
  };
  const graceMs = options.graceMs ?? 1_000;
  const keys = new Map<string, KeyState>();
  const stateOf = new WeakMap<LaneCall, { state: KeyState; lane?: LaneState; expectedMs: number }>();
  // Keys with calls waiting, in turn order: each dispatch takes the first that fits and puts it last.
  let turns: KeyState[] = [];
  let closed = false;

  const lanes: LaneState[] = Array.from({ length: workers }, () => {
    const state: LaneState = { lane: undefined as unknown as SandboxLane, expectedMs: 0 };
    state.lane = createSandboxLane({ host, graceMs, requeue, answered });
    return state;
  });
  const syntaxLane = createSandboxLane({
    host,
    graceMs,
    requeue: (calls) => {
      for (const call of calls) syntaxLane.send(call);
    },
    answered: (call, result) => call.resolve(result),
  });

  const sweep = setInterval(sweepIdle, Math.max(1_000, idleMs / 2));
  sweep.unref();

  function answered(call: LaneCall, result: unknown) {
    const held = stateOf.get(call);
    stateOf.delete(call);
    if (held) {
      const { state, lane } = held;
      state.inFlight--;
      if (lane) lane.expectedMs = Math.max(0, lane.expectedMs - held.expectedMs);
      state.lastUsedAt = Date.now();
      const outcome = result as TransformOutcome;
      const ms =
        outcome.kind === "error" && outcome.failure === "timeout" ? options.timeoutMs : (outcome as { elapsedMs: number }).elapsedMs;
      state.avgMs = state.avgMs === undefined ? ms : state.avgMs * 0.8 + ms * 0.2;
      if (outcome.kind === "error" && outcome.failure) options.onFailure?.(state.key, outcome.failure);
      freeIfDone(state);
    }
    call.resolve(result);
    dispatch();
  }

  /** Calls whose worker ended before they ran: first in their keys' queues again. */
  function requeue(calls: LaneCall[]) {
    for (const call of [...calls].reverse()) {
      const held = stateOf.get(call);
      if (!held) continue;
      const { state, lane } = held;
      state.inFlight--;
      if (lane) lane.expectedMs = Math.max(0, lane.expectedMs - held.expectedMs);
      state.pending.unshift(call);
      if (!turns.includes(state)) turns.unshift(state);
    }
    dispatch();
  }

  function hasRoom(lane: LaneState): boolean {
    const count = lane.lane.inFlight.length;
    return count === 0 || (count < maxPipeline && lane.expectedMs < pipelineBudgetMs);
  }

  function expectedOf(state: KeyState): number {
    return state.avgMs ?? options.timeoutMs;
  }

  /** The key whose turn it is on `lane`: its own, a new one, or (on an idle worker) one stuck behind a busy worker. */
  function pick(lane: LaneState): KeyState | undefined {
    const idle = lane.lane.inFlight.length === 0;
    for (const state of turns) {
      if (state.lane === lane) {
        if (idle || lane.expectedMs + expectedOf(state) <= pipelineBudgetMs) return state;
        continue;
      }
      if (!idle || state.inFlight > 0) continue;
      if (state.lane === undefined || state.lane.lane.inFlight.length > 0) return state;
    }
    return undefined;
  }

  function dispatch() {
    if (closed) return;
    let progressed = true;
    while (progressed && turns.length > 0) {
      progressed = false;
      for (const lane of lanes) {
        if (!hasRoom(lane)) continue;
        const state = pick(lane);
        if (!state) continue;
        sendTo(lane, state);
        progressed = true;
      }
    }
  }

  function sendTo(lane: LaneState, state: KeyState) {
    // Moved: the old worker's copy of the sandbox is freed.
    if (state.lane && state.lane !== lane) state.lane.lane.forget(state.key);
    state.lane = lane;
    const call = state.pending.shift()!;
    turns = turns.filter((s) => s !== state);
    if (state.pending.length > 0) turns.push(state);
    const expectedMs = expectedOf(state);
    state.inFlight++;
    lane.expectedMs += expectedMs;
    stateOf.set(call, { state, lane, expectedMs });
    lane.lane.send(call);
  }

  function keyState(key: string): KeyState {
    let state = keys.get(key);
    if (state) return state;
    state = { key, pending: [], lane: undefined, inFlight: 0, avgMs: undefined, lastUsedAt: Date.now(), forgotten: false };
    keys.set(key, state);
    // A destination's new settings revision: older revisions' sandboxes go once they are done.
    const current = revisionOf(key);
    if (current !== undefined) {
      for (const other of keys.values()) {
        const older = revisionOf(other.key);
        if (older?.destinationId === current.destinationId && older.revision < current.revision) forget(other);
      }
    }
    return state;
  }

  function forget(state: KeyState) {
    state.forgotten = true;
    freeIfDone(state);
  }

  function freeIfDone(state: KeyState) {
    if (!state.forgotten || state.pending.length > 0 || state.inFlight > 0) return;
    state.lane?.lane.forget(state.key);
    if (keys.get(state.key) === state) keys.delete(state.key);
  }

  function sweepIdle() {
    const before = Date.now() - idleMs;
    for (const state of [...keys.values()]) {
      if (state.lastUsedAt < before && state.pending.length === 0 && state.inFlight === 0) forget(state);
    }
  }

  return {
    run(key, source, body, runOptions) {
      if (closed) return Promise.resolve({ kind: "error", message: "the transform sandboxes are closed", elapsedMs: 0 });
      const state = keyState(key);
      state.forgotten = false;
      const waiting = state.pending.length;
      if (runOptions?.mayDefer && waiting >= 2 && waiting * (state.avgMs ?? 0) > maxQueueWaitMs) {
        return Promise.resolve({ kind: "busy", elapsedMs: 0 });
      }
      return new Promise<TransformOutcome>((resolve) => {
        const call: LaneCall = {
          request: { id: 0, op: "run", key, source, body, maxResultBytes: runOptions?.maxResultBytes },
          resolve: resolve as (result: unknown) => void,
          restarts: 0,
        };
        state.pending.push(call);
        if (!turns.includes(state)) turns.push(state);
        dispatch();
      });
    },
    syntaxError(source) {
      return new Promise<string | undefined>((resolve) => {
        syntaxLane.send({ request: { id: 0, op: "syntax", source }, resolve: resolve as (result: unknown) => void, restarts: 0 });
      });
    },
    forget(key) {
      const state = keys.get(key);
      if (state) forget(state);
    },
    forgetDestination(destinationId) {
      for (const state of [...keys.values()]) if (destinationOf(state.key) === destinationId) forget(state);
    },
    close() {
      closed = true;
      clearInterval(sweep);
      for (const state of keys.values()) {
        for (const call of state.pending.splice(0)) call.resolve(failure(call, "the transform sandboxes were closed"));
      }
      keys.clear();
      turns = [];
      for (const lane of lanes) lane.lane.close();
      syntaxLane.close();
    },
  };
}
