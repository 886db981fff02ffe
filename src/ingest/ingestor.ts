import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { Clock } from "../clock.js";
import type { Queryable } from "../db/pool.js";
import { storeMessages, type MessageToStore } from "../db/queries/store-messages.js";
import type { Call } from "./call.js";
import type { Metrics } from "../metrics.js";
import type { TraceContext } from "../tracing/trace-context.js";
import { limits } from "./limits.js";
import { buildCallPayload } from "./payload.js";
import { validateCall } from "./validate.js";

export interface RejectedCall {
  index: number;
  /** Names the field or limit. */
  reason: string;
  field: string;
}

export interface IngestResult {
  /** Calls acknowledged: stored now, or stored before under the same messageId. */
  accepted: number;
  rejected: RejectedCall[];
  /** messageId per input index; "" for rejected calls. */
  messageIds: string[];
}

export interface IngestorOptions {
  pool: pg.Pool;
  clock: Clock;
  metrics?: Metrics | undefined;
}

export interface IngestOptions {
  /** Stored with every call, and sent on every webhook request for it. */
  trace?: TraceContext | undefined;
  /** Where to store them (a transaction); the pool by default. */
  db?: Queryable | undefined;
}

export interface Ingestor {
  /** Validates, stores and routes calls of one source in one statement. */
  ingest(sourceId: string, calls: readonly Call[], options?: IngestOptions): Promise<IngestResult>;
}

/**
 * The single path every call takes into Waypost, whichever API it came
 * through. Nothing is acknowledged before its statement has committed.
 */
export function createIngestor(options: IngestorOptions): Ingestor {
  return {
    async ingest(sourceId, calls, { trace, db = options.pool } = {}) {
      const receivedAt = options.clock.now();
      const prepared = prepareCalls(calls, receivedAt, trace);
      await storeMessages(
        db,
        sourceId,
        receivedAt,
        prepared.toStore.map((item) => item.message),
      );
      if (options.metrics) {
        for (const item of prepared.toStore) options.metrics.callsAccepted.inc({ type: item.call.type });
        if (prepared.rejected.length > 0) options.metrics.callsRejected.inc(prepared.rejected.length);
      }
      return {
        accepted: calls.length - prepared.rejected.length,
        rejected: prepared.rejected,
        messageIds: prepared.messageIds,
      };
    },
  };
}

interface PreparedCalls {
  toStore: Array<{ call: Call; message: MessageToStore }>;
  rejected: RejectedCall[];
  messageIds: string[];
}

function prepareCalls(calls: readonly Call[], receivedAt: Date, trace: TraceContext | undefined): PreparedCalls {
  const toStore: PreparedCalls["toStore"] = [];
  const rejected: RejectedCall[] = [];
  const messageIds: string[] = [];
  const seen = new Set<string>();
  calls.forEach((call, index) => {
    const problem = validateCall(call);
    if (problem) {
      rejected.push({ index, field: problem.field, reason: problem.message });
      messageIds.push("");
      return;
    }
    const messageId = call.messageId || randomUUID();
    const payload = buildCallPayload(call, messageId, receivedAt);
    const size = Buffer.byteLength(payload);
    if (size > limits.maxCallBytes) {
      rejected.push({
        index,
        field: "message",
        reason: `message is ${size} bytes, over the limit of ${limits.maxCallBytes} bytes (32 KB) per call`,
      });
      messageIds.push("");
      return;
    }
    messageIds.push(messageId);
    // A repeat inside one batch is acknowledged like a repeat across batches.
    if (seen.has(messageId)) return;
    seen.add(messageId);
    toStore.push({
      call,
      message: {
        messageId,
        type: call.type,
        userId: call.userId,
        anonymousId: call.anonymousId,
        payload,
        integrations: call.integrations,
        traceparent: trace?.traceparent,
        tracestate: trace?.tracestate,
      },
    });
  });
  return { toStore, rejected, messageIds };
}
