import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { Clock } from "../clock.js";
import type { Queryable } from "../db/pool.js";
import type { JobTableDriver } from "../db/job-table/index.js";
import type { MessageToStore } from "../db/job-table/index.js";
import type { Call } from "../calls/call.js";
import type { Metrics } from "../metrics.js";
import type { TraceContext } from "../tracing/trace-context.js";
import { callTooLarge, limits } from "./limits.js";
import { buildCallPayload } from "./payload.js";
import { validateCall } from "./validate.js";
import type { ActivePlan, PlanCache } from "../plans/plan-cache.js";
import { checkCall, type Violation } from "../plans/check-call.js";
import type { ViolationRecorder } from "../plans/violation-recorder.js";
import type { KindMatcherOf } from "../routing/route-rules.js";
import { createSourceFilterCache, heldBackFrom, type SourceFilters } from "./source-filters.js";

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
  /** Tracking plans: each source's plan is applied to its calls (docs/tracking-plans.md). */
  plans?: { cache: PlanCache; recorder: ViolationRecorder } | undefined;
  /** Called after a store that queued deliveries has committed: wakes the delivery loops (a throttled NOTIFY, background/throttled-notify.ts). */
  onQueued?: (() => void) | undefined;
  /** The job table's driver (one Postgres's or Citus's). */
  jobTable: JobTableDriver;
  /** Each destination kind's own routing (an integration's subscriptions): the kinds' `matcherOfRow`. */
  kindMatcher: KindMatcherOf;
}

export interface IngestOptions {
  /** Stored with every call, and sent on every webhook request for it. */
  trace?: TraceContext | undefined;
  /** Where to store them (a transaction); the pool by default. */
  db?: Queryable | undefined;
  /** The most bytes one call may have: `limits.maxCallBytes` unless the calls come from elsewhere (a webhook source's). */
  maxCallBytes?: number | undefined;
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
  const filterCache = createSourceFilterCache(options.kindMatcher);
  const { jobTable } = options;

  /** Stores and routes; when a destination's filters changed since they were read, reads them again and retries. */
  async function storeRouted(db: Queryable, sourceId: string, receivedAt: Date, messages: MessageToStore[]) {
    let filters = await filterCache.get(db, sourceId);
    for (let tries = 1; ; tries++) {
      applyFilters(messages, filters, receivedAt);
      const result = await jobTable.storeMessages(db, sourceId, receivedAt, messages, filters.stamp);
      if (result.fresh || tries >= 5) {
        if (!result.fresh) throw new Error("the source's destination filters kept changing while its calls were stored; try again");
        return result;
      }
      filters = await filterCache.get(db, sourceId, true);
    }
  }

  return {
    async ingest(sourceId, calls, { trace, db = options.pool, maxCallBytes = limits.maxCallBytes } = {}) {
      // Taken once per request, before the calls are checked: a plan changed
      // meanwhile applies to calls received after the change.
      const plan = options.plans ? await options.plans.cache.forSource(sourceId) : undefined;
      const receivedAt = options.clock.now();
      const prepared = prepareCalls(calls, receivedAt, plan, trace, maxCallBytes);
      const messages = prepared.toStore.map((item) => item.message);
      const result = await storeRouted(db, sourceId, receivedAt, messages);
      if (result.queued) options.onQueued?.();
      if (options.metrics) {
        for (const [destinationId, reason, count] of result.filtered) {
          options.metrics.callsFiltered.inc({ destination_id: destinationId, reason }, count);
        }
        for (const item of prepared.toStore) options.metrics.callsAccepted.inc({ type: item.call.type });
        if (prepared.rejected.length > 0) options.metrics.callsRejected.inc(prepared.rejected.length);
      }
      if (prepared.violations.length > 0) options.plans?.recorder.record(sourceId, prepared.violations, receivedAt);
      return {
        accepted: calls.length - prepared.rejected.length,
        rejected: prepared.rejected,
        messageIds: prepared.messageIds,
      };
    },
  };
}

/**
 * Marks each message with the destinations whose rules hold it back, and
 * why: filter first, then consent, then the kind's matcher (an
 * integration's subscriptions; docs/routing.md#consent).
 */
function applyFilters(messages: MessageToStore[], filters: SourceFilters, receivedAt: Date): void {
  for (const message of messages) {
    message.filteredOut = filters.filters.length === 0 ? undefined : heldBackFrom(filters, JSON.parse(message.payload), receivedAt);
  }
}

interface PreparedCalls {
  toStore: Array<{ call: Call; message: MessageToStore }>;
  rejected: RejectedCall[];
  messageIds: string[];
  violations: Violation[];
}

function prepareCalls(
  calls: readonly Call[],
  receivedAt: Date,
  plan: ActivePlan | undefined,
  trace: TraceContext | undefined,
  maxCallBytes: number,
): PreparedCalls {
  const toStore: PreparedCalls["toStore"] = [];
  const rejected: RejectedCall[] = [];
  const messageIds: string[] = [];
  const violations: Violation[] = [];
  const seen = new Set<string>();
  calls.forEach((given, index) => {
    let call = given;
    const problem = validateCall(call);
    if (problem) {
      rejected.push({ index, field: problem.field, reason: problem.message });
      messageIds.push("");
      return;
    }
    const messageId = call.messageId || randomUUID();
    const refuseIfTooLarge = (payload: string): boolean => {
      const size = Buffer.byteLength(payload);
      if (size <= maxCallBytes) return false;
      rejected.push({ index, field: "message", reason: callTooLarge(size, maxCallBytes) });
      messageIds.push("");
      return true;
    };
    // Unless the plan strips keys (omit), the call is stored as given: one
    // over the size limit is refused before any schema work, so a request
    // of hundreds of KB cannot buy that much checking against the plan.
    let payload = plan?.mode === "omit" ? undefined : buildCallPayload(call, messageId, receivedAt);
    if (payload !== undefined && refuseIfTooLarge(payload)) return;
    if (plan) {
      const check = checkCall(plan.compiled, call, plan.mode === "omit");
      violations.push(...check.violations);
      const first = check.violations[0];
      if (first && plan.mode === "block") {
        rejected.push({
          index,
          field: first.path.split(/[.[]/)[0]!,
          reason: `violates the tracking plan: ${first.path}: ${first.message}`,
        });
        messageIds.push("");
        return;
      }
      if (check.call !== call) payload = undefined;
      call = check.call;
    }
    if (payload === undefined) {
      payload = buildCallPayload(call, messageId, receivedAt);
      if (refuseIfTooLarge(payload)) return;
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
        sentAt: call.sentAt,
      },
    });
  });
  return { toStore, rejected, messageIds, violations };
}
