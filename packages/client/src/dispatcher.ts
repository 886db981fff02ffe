import type { CallOptions } from "@connectrpc/connect";
import { Code } from "@connectrpc/connect";
import type { BatchRequest, BatchResponse } from "../../../gen/waypost/v1/tracking_pb.js";
import type { ClientLog } from "./debug-log.js";
import { AnalyticsError } from "./errors.js";
import { CallQueue, type QueuedCall } from "./queue.js";
import { asConnectError, classifyFailure, retryDelayMs, type RetryPolicy } from "./retry.js";
import type { Reporter } from "./reporter.js";
import { batchRequestBytes, encodeBatch, halve, takeBatch } from "./split.js";

export interface DispatcherOptions {
  /** `TrackingService.Batch` of a Connect client. */
  sendBatch(request: BatchRequest, options: CallOptions): Promise<BatchResponse>;
  flushAt: number;
  flushIntervalMs: number;
  maxQueueSize: number;
  maxConcurrentRequests: number;
  maxBatchBytes: number;
  requestTimeoutMs: number;
  retry: RetryPolicy;
  reporter: Reporter;
  log: ClientLog;
}

/** Calls that travel together: one request, and its retries. */
interface Batch {
  calls: QueuedCall[];
  /** Retries made so far. */
  attempt: number;
  request?: BatchRequest;
  /** Its first traced call's context, sent with every attempt. */
  headers?: Record<string, string>;
  controller?: AbortController;
  timer?: ReturnType<typeof setTimeout>;
  /** Settled or abandoned; a late response is then ignored. */
  done: boolean;
}

/**
 * The headers of a batch: one request carries one trace context, that of
 * its first call made inside a trace (undefined when none was).
 */
function traceHeaders(calls: readonly QueuedCall[]): Record<string, string> | undefined {
  for (const call of calls) if (call.traceparent) return { traceparent: call.traceparent };
  return undefined;
}

/**
 * Moves queued calls to the server: batches them by count, size and time,
 * keeps a bounded number of requests in flight, retries transient failures,
 * and tells `flush()` waiters when everything before them is settled.
 * Every call ends in exactly one success or failure report.
 */
export class Dispatcher {
  private readonly queue = new CallQueue();
  /** Calls taken from the queue and not settled yet. */
  private held = 0;
  private readonly inFlight = new Set<Batch>();
  /** Batches waiting out a backoff. */
  private readonly backingOff = new Set<Batch>();
  /** Batches due for a retry, waiting for a request slot. */
  private readonly ready: Batch[] = [];
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  private pumpScheduled = false;
  private lastSeq = 0;
  /** Calls up to this seq are sent regardless of flushAt (a flush or the timer asked). */
  private forceUpTo = 0;
  private waiters: Array<{ upTo: number; resolve: () => void }> = [];

  constructor(private readonly o: DispatcherOptions) {}

  /** The hot path: O(1), no I/O; sending is scheduled, not done here. */
  enqueue(call: QueuedCall): void {
    if (this.queue.length + this.held >= this.o.maxQueueSize) {
      this.o.reporter.overflow(call, this.o.maxQueueSize);
      return;
    }
    call.seq = ++this.lastSeq;
    this.queue.push(call);
    if (this.queue.length >= this.o.flushAt || this.queue.bytes >= this.o.maxBatchBytes) {
      if (!this.pumpScheduled) {
        this.pumpScheduled = true;
        queueMicrotask(() => this.pump());
      }
    } else if (this.flushTimer === undefined) {
      this.startFlushTimer();
    }
  }

  /** Resolves when every call enqueued before now is acknowledged or failed. */
  flush(): Promise<void> {
    const upTo = this.lastSeq;
    if (this.oldestUnsettled() > upTo) return Promise.resolve();
    this.forceUpTo = Math.max(this.forceUpTo, upTo);
    const settled = new Promise<void>((resolve) => this.waiters.push({ upTo, resolve }));
    this.pump();
    return settled;
  }

  /** Flushes; after `timeoutMs` gives up on what is left, reporting it as failed. */
  async drain(timeoutMs: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), timeoutMs)));
    const expired = await Promise.race([this.flush().then(() => false), timedOut]);
    clearTimeout(timer);
    if (expired) this.abandon(timeoutMs);
  }

  /** Calls held: queued, in flight and waiting to be retried. */
  get size(): number {
    return this.queue.length + this.held;
  }

  private onFlushTimer(): void {
    this.flushTimer = undefined;
    this.forceUpTo = this.lastSeq;
    this.o.log.debug(`flush interval of ${this.o.flushIntervalMs} ms passed with ${this.queue.length} calls queued`);
    this.pump();
  }

  private pump(): void {
    this.pumpScheduled = false;
    while (this.inFlight.size < this.o.maxConcurrentRequests) {
      const retry = this.ready.shift();
      if (retry) {
        this.send(retry);
        continue;
      }
      if (!this.queueIsDue()) break;
      const calls = takeBatch(this.queue, this.o.flushAt, this.o.maxBatchBytes);
      this.held += calls.length;
      this.send({ calls, attempt: 0, done: false });
    }
    if (this.queue.length === 0) {
      if (this.flushTimer !== undefined) clearTimeout(this.flushTimer);
      this.flushTimer = undefined;
    } else if (this.flushTimer === undefined) {
      // Calls left below flushAt after a busy spell (no request slot when
      // they were due by count) must still go out within the interval.
      this.startFlushTimer();
    }
  }

  private startFlushTimer(): void {
    this.flushTimer = setTimeout(() => this.onFlushTimer(), this.o.flushIntervalMs);
  }

  private queueIsDue(): boolean {
    const head = this.queue.peek();
    if (head === undefined) return false;
    return this.queue.length >= this.o.flushAt || this.queue.bytes >= this.o.maxBatchBytes || head.seq <= this.forceUpTo;
  }

  private send(batch: Batch): void {
    if (!batch.request) {
      const encoded = encodeBatch(batch.calls);
      for (const { call, error } of encoded.unencodable) {
        this.held--;
        this.o.reporter.failed([call], new AnalyticsError("rejected", `call cannot be encoded: ${error.message}`, { cause: error }));
      }
      batch.calls = encoded.sent;
      batch.request = encoded.request;
      batch.headers = traceHeaders(batch.calls);
      if (batch.calls.length === 0) {
        // Not re-entering pump() from inside its loop.
        queueMicrotask(() => this.afterSettling());
        return;
      }
    }
    this.inFlight.add(batch);
    const controller = new AbortController();
    batch.controller = controller;
    if (this.o.log.debugEnabled) {
      const retryNote = batch.attempt > 0 ? ` (retry ${batch.attempt} of ${this.o.retry.maxRetries})` : "";
      this.o.log.debug(`sending ${batch.calls.length} calls, ~${batchRequestBytes(batch.calls)} bytes${retryNote}`);
    }
    this.o
      .sendBatch(batch.request, { signal: controller.signal, timeoutMs: this.o.requestTimeoutMs, headers: batch.headers })
      .then(
        (response) => this.onResponse(batch, response),
        (error: unknown) => this.onError(batch, error),
      )
      .catch((error: unknown) => this.o.log.error(`internal error while settling a batch: ${String(error)}`));
  }

  private onResponse(batch: Batch, response: BatchResponse): void {
    if (batch.done) return;
    this.settle(batch);
    const reasons = new Map<number, string>();
    // A server that predates index's presence leaves it out for the first call.
    for (const r of response.rejected) reasons.set(r.index ?? 0, r.reason);
    this.o.log.debug(`batch of ${batch.calls.length} acknowledged: ${response.accepted} accepted, ${reasons.size} rejected`);
    const accepted: QueuedCall[] = [];
    batch.calls.forEach((call, index) => {
      const reason = reasons.get(index);
      if (reason === undefined) accepted.push(call);
      else this.o.reporter.failed([call], new AnalyticsError("rejected", `the server rejected ${call.type} ${call.messageId}: ${reason}`));
    });
    this.o.reporter.succeeded(accepted);
    this.afterSettling();
  }

  private onError(batch: Batch, thrown: unknown): void {
    if (batch.done) return;
    this.inFlight.delete(batch);
    const error = asConnectError(thrown);
    const code = Code[error.code];
    const plan = classifyFailure(error);
    if (plan.action === "split" && batch.calls.length > 1) {
      const halves = halve(batch.calls).map((calls): Batch => ({ calls, attempt: batch.attempt, done: false }));
      this.o.log.debug(`request of ${batch.calls.length} calls refused as too large (${error.rawMessage}); splitting it in two`);
      this.ready.unshift(...halves);
    } else if (plan.action === "retry" && batch.attempt < this.o.retry.maxRetries) {
      this.backOff(batch, plan.retryAfterMs, error.message);
    } else {
      this.settle(batch);
      const reason = plan.action === "retry" ? "retries_exhausted" : "permanent";
      const tries = plan.action === "retry" ? ` after ${batch.attempt + 1} attempts` : "";
      const message = `sending ${batch.calls.length} calls failed${tries}: ${error.message}`;
      this.o.reporter.failed(batch.calls, new AnalyticsError(reason, message, { cause: error, code }));
    }
    this.afterSettling();
  }

  private backOff(batch: Batch, retryAfterMs: number | undefined, why: string): void {
    batch.attempt++;
    const delay = retryDelayMs(batch.attempt, this.o.retry, retryAfterMs);
    const hint = retryAfterMs === undefined ? "" : ` (server asked for ${retryAfterMs} ms)`;
    this.o.log.debug(`batch of ${batch.calls.length} failed: ${why}; retry ${batch.attempt} in ${delay} ms${hint}`);
    this.backingOff.add(batch);
    batch.timer = setTimeout(() => {
      this.backingOff.delete(batch);
      this.ready.push(batch);
      this.pump();
    }, delay);
  }

  private settle(batch: Batch): void {
    batch.done = true;
    this.inFlight.delete(batch);
    this.held -= batch.calls.length;
  }

  private afterSettling(): void {
    this.pump();
    if (this.waiters.length === 0) return;
    const oldest = this.oldestUnsettled();
    const still = this.waiters.filter((w) => w.upTo >= oldest);
    const resolved = this.waiters.filter((w) => w.upTo < oldest);
    this.waiters = still;
    for (const w of resolved) w.resolve();
  }

  /** Seq of the oldest call not yet settled; Infinity when there is none. */
  private oldestUnsettled(): number {
    let oldest = this.queue.peek()?.seq ?? Infinity;
    for (const set of [this.inFlight, this.backingOff, this.ready]) {
      for (const batch of set) oldest = Math.min(oldest, batch.calls[0]?.seq ?? Infinity);
    }
    return oldest;
  }

  /** close() ran out of time: stop everything and report what is left. */
  private abandon(timeoutMs: number): void {
    const batches = [...this.inFlight, ...this.backingOff, ...this.ready];
    const left = [...this.queue.drain(), ...batches.flatMap((b) => b.calls)];
    for (const batch of batches) {
      batch.done = true;
      clearTimeout(batch.timer);
      batch.controller?.abort();
    }
    this.inFlight.clear();
    this.backingOff.clear();
    this.ready.length = 0;
    this.held = 0;
    if (this.flushTimer !== undefined) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (left.length > 0) {
      const message = `close() gave up after ${timeoutMs} ms with ${left.length} calls not acknowledged`;
      this.o.log.debug(message);
      this.o.reporter.failed(left, new AnalyticsError("closed", message));
    }
    this.afterSettling();
  }
}
