import type { RetrySchedule } from "../../config.js";
import { batchRowId, routedTo, type AttemptResult, type ClaimedDelivery, type DeliveryCompletion } from "../../db/job-table/index.js";
import type { CallAttempts, LogAttemptRow, LogBatchRange, LogException, LogFate, LogSentBody } from "../../db/call-log/log-advance.js";
import type { LogCursor } from "../../db/call-log/log-cursors.js";
import type { LoggedCall } from "../../db/call-log/log-read.js";
import { logDeliveryId } from "../../db/queries/log-deliveries.js";
import { attemptsKey, isSingle, noAttempts, withThisTry } from "./call-attempts.js";
import { orderingKeyOf } from "./page-plan.js";
import { heldBackBy, holdsBack, routedCall, type RouteRules } from "../../routing/route-rules.js";
import type { ShapedBody } from "../../routing/shape-body.js";
import { decideCompletion } from "../completion.js";
import type { CompletionRule } from "../kinds/kind.js";
import type { AnyDestination } from "../kinds/registry.js";

/** What a page of the log needs to be routed and delivered: the destination as it is now. */
export interface PageContext {
  destination: AnyDestination;
  rules: RouteRules;
  /** Every call goes to the kind as stored: no routing rule applies (a lake's archive). */
  asStored?: boolean;
  rule: CompletionRule;
  retry: RetrySchedule;
  now(): Date;
  /** Users with a delivery still queued here (per-user ordering): their calls wait behind it. */
  waitingUsers: ReadonlySet<string>;
  /** The attempts the page's calls had in the cursor's earlier tries that failed as a whole, by message pk. */
  earlier: ReadonlyMap<string, CallAttempts>;
  /** The destination's drops and transform, when it has any (undefined: the body is sent as stored). */
  shape?: ((payload: string) => Promise<ShapedBody>) | undefined;
  /** Hands a call to the destination's kind; `flush` sends what the kinds hold without waiting for their time. */
  deliver(job: ClaimedDelivery, destination: AnyDestination, body: string): Promise<AttemptResult[]>;
  flush(): void;
}

/** A page's outcome: the cursor moves past it, or (the batch failed as a whole) stays. */
export type PageOutcome =
  | {
      kind: "advance";
      batches: LogBatchRange[];
      rows: LogAttemptRow[];
      fates: LogFate[];
      exceptions: LogException[];
      sentBodies: LogSentBody[];
      /** The sent calls' results, as endpoint health reads them. */
      completions: DeliveryCompletion[];
    }
  | { kind: "hold"; runAt: Date; error: string; rows: LogAttemptRow[]; sentBodies: LogSentBody[]; completions: DeliveryCompletion[] };

/** What became of one call of the page. */
type CallOutcome =
  | { kind: "skipped" }
  | { kind: "fate"; fate: LogFate }
  | { kind: "waiting" }
  | { kind: "failed-transform"; error: string }
  | { kind: "sent"; job: ClaimedDelivery; results: AttemptResult[] };

/**
 * The job a kind is handed for a call read from the log: named by the
 * call, so a retried page names it again the same way; its attempts so far
 * are its earlier tries (they set its retry schedule).
 */
function jobOf(cursor: LogCursor, call: LoggedCall, context: PageContext): ClaimedDelivery {
  const { destination } = context;
  const earlier = context.earlier.get(call.messagePk);
  return {
    destinationId: cursor.destinationId,
    // The id its derived delivery has (db/queries/log-deliveries.ts): what events and spans name.
    id: logDeliveryId(call.messagePk, cursor.destinationId),
    leaseToken: 0,
    attemptCount: earlier?.tries ?? 0,
    firstAttemptAt: earlier?.firstAt ?? null,
    retryUrls: null,
    payload: call.payload,
    messageId: call.messageId,
    receivedAt: call.receivedAt,
    sentAt: call.sentAt,
    sourceId: cursor.sourceId,
    traceparent: call.traceparent,
    tracestate: call.tracestate,
    probe: false,
    destinationRevision: destination.revision,
  };
}

/**
 * Routes a call as ingest routes it for a destination per call: the call's
 * integrations object, then the destination's filter, consent and kind
 * rules (a deletion notification goes to every destination, as it does per
 * call). The body is parsed only when something reads it.
 */
function route(call: LoggedCall, context: PageContext): { fate?: LogFate; body?: Record<string, unknown> } {
  if (call.type === "delete" || context.asStored) return {};
  const reads = holdsBack(context.rules) || call.payload.includes('"integrations"') || context.destination.ordering === "per_user";
  if (!reads) return {};
  const body = JSON.parse(call.payload) as Record<string, unknown>;
  const integrations = body.integrations as Parameters<typeof routedTo>[0];
  if (!routedTo(integrations, context.destination.name)) {
    return { fate: { messagePk: call.messagePk, fate: "integrations_off", reason: null }, body };
  }
  const reason = heldBackBy(context.rules, routedCall(body, call.receivedAt));
  return reason ? { fate: { messagePk: call.messagePk, fate: "filtered", reason }, body } : { body };
}

/** A call routed and shaped, ready for its kind. */
type Ready = { kind: "ready"; job: ClaimedDelivery; body: string };

/** A page routed and shaped, nothing sent yet: what each call will do, and how many its kind will get. */
export interface PreparedPage {
  outcomes: Array<CallOutcome | Ready>;
  keys: Array<string | null>;
  sendable: number;
}

async function shapeCall(cursor: LogCursor, call: LoggedCall, context: PageContext): Promise<CallOutcome | Ready> {
  let body = call.payload;
  if (context.shape) {
    const shaped = await context.shape(call.payload);
    if (shaped.kind === "dropped") return { kind: "fate", fate: { messagePk: call.messagePk, fate: "filtered", reason: "transform" } };
    if (shaped.kind === "error") return { kind: "failed-transform", error: shaped.error };
    if (shaped.kind === "send") body = shaped.body;
  }
  return { kind: "ready", job: jobOf(cursor, call, context), body };
}

/**
 * Routes and shapes one page of a cursor's calls, sending nothing: the
 * loader first asks whether the calls its kind would get fill a batch
 * (page-plan.ts), and a page that waits is routed again when it is read
 * again (a trickle's cost, never a busy destination's).
 */
export async function preparePage(cursor: LogCursor, calls: readonly LoggedCall[], context: PageContext): Promise<PreparedPage> {
  const keys: Array<string | null> = [];
  const pending: Array<CallOutcome | Ready | Promise<CallOutcome | Ready>> = [];
  for (const call of calls) {
    if (call.routedPerCall) {
      keys.push(null);
      pending.push({ kind: "skipped" });
      continue;
    }
    const routed = route(call, context);
    const key = context.destination.ordering === "per_user" ? orderingKeyOf(call, routed.body) : null;
    keys.push(key);
    if (routed.fate) pending.push({ kind: "fate", fate: routed.fate });
    else if (key !== null && context.waitingUsers.has(key)) pending.push({ kind: "waiting" });
    else if (!context.shape) pending.push({ kind: "ready", job: jobOf(cursor, call, context), body: call.payload });
    else pending.push(shapeCall(cursor, call, context));
  }
  const outcomes = await Promise.all(pending);
  return { outcomes, keys, sendable: outcomes.filter((o) => o.kind === "ready").length };
}

/**
 * Sends a prepared page through the destination's kind and says what to
 * record: the delivered runs, fates, exceptions (calls that failed alone,
 * and calls waiting behind their user's exception), or, when every call
 * sent failed and may be retried, a hold of the cursor under the retry
 * schedule.
 */
export async function sendPage(
  cursor: LogCursor,
  calls: readonly LoggedCall[],
  prepared: PreparedPage,
  context: PageContext,
): Promise<PageOutcome> {
  const sent = prepared.outcomes.map((outcome): CallOutcome | Promise<CallOutcome> => {
    if (outcome.kind !== "ready") return outcome;
    return context.deliver(outcome.job, context.destination, outcome.body).then((results) => {
      const sentBody = outcome.body === outcome.job.payload ? undefined : outcome.body;
      for (const r of results) {
        r.destinationRevision = context.destination.revision;
        r.sentBody = sentBody;
      }
      return { kind: "sent", job: outcome.job, results };
    });
  });
  // Every call of the page is with its kind now: send what the kinds hold instead of waiting for their flush time.
  context.flush();
  return recordPage(cursor, calls, await Promise.all(sent), prepared.keys, context);
}

function recordPage(
  cursor: LogCursor,
  calls: readonly LoggedCall[],
  outcomes: readonly CallOutcome[],
  keys: ReadonlyArray<string | null>,
  context: PageContext,
): PageOutcome {
  const now = context.now();
  const rows = new Map<string, LogAttemptRow>();
  const rowOf = (a: AttemptResult, call: LoggedCall): LogAttemptRow => {
    const ref = a.batch ?? { id: crypto.randomUUID(), calls: 1 };
    const id = batchRowId(a.batch ? (a as AttemptResult & { batch: typeof ref }) : { ...a, batch: ref });
    let row = rows.get(id);
    if (!row) {
      row = {
        id,
        batchId: ref.id,
        urlIndex: a.urlIndex,
        url: a.url,
        attemptedAt: a.attemptedAt,
        outcome: a.outcome,
        statusCode: a.statusCode,
        error: a.error,
        latencyMs: a.latencyMs,
        responseBody: a.responseBody,
        destinationRevision: a.destinationRevision ?? null,
        calls: ref.calls,
        deliveries: 0,
        pks: [],
        discardedValues: 0,
      };
      rows.set(id, row);
    }
    row.deliveries++;
    row.pks.push(call.messagePk);
    row.discardedValues += a.discardedValues ?? 0;
    return row;
  };

  const fates: LogFate[] = [];
  const exceptions: LogException[] = [];
  const batches: LogBatchRange[] = [];
  const sentBodies: LogSentBody[] = [];
  // Of calls to retry: shown only if the page is held (they stay deliveries of the log, retrying).
  const retryingBodies: LogSentBody[] = [];
  let run = emptyRun(cursor.window.after);
  let runKey = "";
  const completions: DeliveryCompletion[] = [];
  let sent = 0;
  let retrying = 0;
  let holdUntil: Date | undefined;
  let holdError = "";
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i]!;
    const outcome = outcomes[i]!;
    const earlier = context.earlier.get(call.messagePk);
    let delivered: { row: LogAttemptRow; attempts: CallAttempts } | undefined;
    if (outcome.kind === "fate") {
      fates.push(outcome.fate);
      // Dropped by the transform at send time: per call, its delivery was cancelled (the loop's "completed" says so).
      if (outcome.fate.reason === "transform") completions.push(droppedCompletion(cursor, call, context, now));
    } else if (outcome.kind === "waiting") {
      exceptions.push(exceptionOf(call, keys[i]!, earlier ?? noAttempts, { status: "pending", runAt: now, error: null, retryUrls: null }));
    } else if (outcome.kind === "failed-transform") {
      // Failed before any request, as per call: an attempt counted, none made.
      const attempts = earlier ?? noAttempts;
      const counted = { ...attempts, tries: attempts.tries + 1, firstAt: attempts.firstAt ?? now };
      exceptions.push(exceptionOf(call, keys[i] ?? null, counted, { status: "failed", runAt: now, error: outcome.error, retryUrls: null }));
    } else if (outcome.kind === "sent") {
      sent++;
      const completion = decideCompletion(outcome.job, outcome.results, context.rule, now, context.retry);
      completions.push(completion);
      const callRows = outcome.results.map((r) => rowOf(r, call));
      const attempts = withThisTry(earlier, callRows);
      const sentBody = outcome.results[0]?.sentBody;
      if (completion.status === "delivered") {
        const success = outcome.results.findIndex((r) => r.outcome === "success");
        delivered = { row: callRows[success] ?? callRows[0]!, attempts };
        // A warehouse's note on what it could not store is the call's own: its batch's row holds only the total.
        const discardedValues = outcome.results[success]?.discardedValues;
        const note = discardedValues ? outcome.results[success]!.responseBody : null;
        if (sentBody !== undefined || discardedValues)
          sentBodies.push({ messagePk: call.messagePk, body: sentBody ?? null, discardedValues, note });
      } else {
        if (completion.status === "retrying") {
          retrying++;
          if (!holdUntil || completion.runAt < holdUntil) holdUntil = completion.runAt;
          holdError ||= outcome.results.find((r) => r.error)?.error ?? "";
          if (sentBody !== undefined) retryingBodies.push({ messagePk: call.messagePk, body: sentBody });
        }
        exceptions.push(
          exceptionOf(call, keys[i] ?? null, attempts, {
            status: completion.status as LogException["status"],
            runAt: completion.runAt,
            error: outcome.results.findLast((r) => r.error)?.error ?? null,
            retryUrls: completion.retryUrls,
          }),
        );
      }
    }
    // A new run starts where the delivered calls' attempts change (the next POST, transaction or round; another part
    // of a split batch; other earlier tries).
    if (delivered) {
      const key = attemptsKey(delivered.attempts);
      if (run.row && key !== runKey) {
        batches.push(run);
        run = emptyRun(run.to);
      }
      run.row = delivered.row;
      run.attempts = isSingle(delivered.attempts) ? null : delivered.attempts;
      runKey = key;
      run.delivered++;
    }
    run.calls++;
    run.to = call.position;
  }
  batches.push(run);
  const list = [...rows.values()];
  // Nothing got through and every call sent may be retried: the destination is down, not the calls. Hold the cursor.
  // One call alone says nothing of the others: it is an exception, retried on its own (a page of one is per-user
  // ordering's page, or a trickle).
  if (sent > 1 && retrying === sent && holdUntil)
    return { kind: "hold", runAt: holdUntil, error: holdError || "the batch failed", rows: list, sentBodies: retryingBodies, completions };
  return { kind: "advance", batches, rows: list, fates, exceptions, sentBodies, completions };
}

function emptyRun(at: LogBatchRange["from"]): LogBatchRange {
  return { from: at, to: at, calls: 0, delivered: 0, row: null, attempts: null };
}

/** A call of the page with a delivery row of its own from now on, created when the call was received (as per call). */
function exceptionOf(
  call: LoggedCall,
  key: string | null,
  attempts: CallAttempts,
  fields: Pick<LogException, "status" | "runAt" | "error" | "retryUrls">,
): LogException {
  return {
    messagePk: call.messagePk,
    ...fields,
    attemptCount: attempts.tries,
    firstAttemptAt: attempts.firstAt,
    orderingKey: key,
    createdAt: call.receivedAt,
    attempts: attempts.rows.length > 0 ? attempts : null,
  };
}

function droppedCompletion(cursor: LogCursor, call: LoggedCall, context: PageContext, now: Date): DeliveryCompletion {
  const job = jobOf(cursor, call, context);
  return {
    destinationId: job.destinationId,
    id: job.id,
    leaseToken: 0,
    status: "cancelled",
    runAt: now,
    attempted: false,
    attemptedAt: now,
    retryUrls: null,
    attempts: [],
    probe: false,
  };
}
