import { createBurstLimiter, type ClientLog } from "./debug-log.js";
import { AnalyticsError } from "./errors.js";
import type { QueuedCall } from "./queue.js";
import type { CallRecord } from "./types.js";

export interface ReporterOptions {
  onSuccess?: ((call: CallRecord) => void) | undefined;
  onFailure?: ((call: CallRecord, error: AnalyticsError) => void) | undefined;
  log: ClientLog;
}

/**
 * Tells the application how each call ended. A callback that throws cannot
 * break the client: its error is logged. Failures nobody listens for are
 * logged (once per batch, and a full queue at most once per 10 s), so that a
 * lost call is never silent.
 */
export class Reporter {
  private readonly overflowLog: (message: string) => void;

  constructor(private readonly o: ReporterOptions) {
    this.overflowLog = createBurstLimiter(o.log);
  }

  succeeded(calls: readonly QueuedCall[]): void {
    const onSuccess = this.o.onSuccess;
    if (!onSuccess) return;
    for (const call of calls) this.invoke("onSuccess", () => onSuccess(record(call)));
  }

  failed(calls: readonly QueuedCall[], error: AnalyticsError): void {
    if (calls.length === 0) return;
    const onFailure = this.o.onFailure;
    if (!onFailure) {
      const first = calls[0]!;
      const which = calls.length === 1 ? `${first.type} call ${first.messageId}` : `${calls.length} calls`;
      this.o.log.error(`${which} not delivered (${error.reason}): ${error.message}`);
      return;
    }
    for (const call of calls) this.invoke("onFailure", () => onFailure(record(call), error));
  }

  /**
   * Reported from a microtask: the caller is inside `track()`, and a
   * callback that calls `track()` again must not recurse into it.
   */
  overflow(call: QueuedCall, maxQueueSize: number): void {
    const message =
      `queue is full (maxQueueSize ${maxQueueSize} calls held): ${call.type} call ${call.messageId} dropped; ` +
      "the server may be unreachable or calls are made faster than they can be sent";
    this.o.log.debug(message);
    const error = new AnalyticsError("overflow", message);
    const onFailure = this.o.onFailure;
    if (!onFailure) {
      this.overflowLog(message);
      return;
    }
    queueMicrotask(() => this.invoke("onFailure", () => onFailure(record(call), error)));
  }

  private invoke(name: string, callback: () => void): void {
    try {
      callback();
    } catch (error) {
      this.o.log.error(`${name} callback threw: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    }
  }
}

function record(call: QueuedCall): CallRecord {
  return { type: call.type, messageId: call.messageId, call: call.call };
}
