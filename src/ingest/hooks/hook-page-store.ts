import type pg from "pg";
import type { Call } from "../../calls/call.js";
import type { HookRequestOutcome, HookRequestRow } from "../../db/queries/hook-requests.js";
import { parseTraceparent, type TraceContext } from "../../tracing/trace-context.js";
import type { Ingestor } from "../ingestor.js";
import { maxHookCallBytes } from "./hook-calls.js";

/** A call the ingest path refused, naming its request: thrown, it rolls the page's transaction back. */
export class RefusedCall extends Error {
  constructor(
    readonly requestId: string,
    readonly reason: string,
  ) {
    super(reason);
  }
}

/**
 * Stores the calls of a page's processed requests through the ingest path
 * (filters, fates, plans, deliveries), in the page's transaction `tx`,
 * consecutive requests with the same trace context in one ingest. A call
 * the ingest path refuses (the source's tracking plan blocks it, say)
 * throws RefusedCall, naming its request.
 */
export async function storeHookPageCalls(
  ingestor: Ingestor,
  tx: pg.PoolClient,
  sourceId: string,
  page: { rows: readonly HookRequestRow[]; outcomes: readonly HookRequestOutcome[]; calls: ReadonlyMap<string, Call[]> },
): Promise<void> {
  let group: { trace: TraceContext | undefined; calls: Call[]; owners: Array<[string, number]> } | undefined;
  const flush = async () => {
    if (!group || group.calls.length === 0) return;
    const result = await ingestor.ingest(sourceId, group.calls, { db: tx, trace: group.trace, maxCallBytes: maxHookCallBytes });
    const first = result.rejected[0];
    if (!first) return;
    const [requestId, index] = group.owners[first.index]!;
    throw new RefusedCall(requestId, `call ${index}: ${first.reason}`);
  };
  for (const [i, row] of page.rows.entries()) {
    if (page.outcomes[i]!.status !== "processed") continue;
    const trace = traceOf(row);
    if (!group || group.trace?.traceparent !== trace?.traceparent || group.trace?.tracestate !== trace?.tracestate) {
      await flush();
      group = { trace, calls: [], owners: [] };
    }
    for (const [index, call] of (page.calls.get(row.id) ?? []).entries()) {
      group.calls.push(call);
      group.owners.push([row.id, index]);
    }
  }
  await flush();
}

/** The request's trace context, when it carried a valid one. */
function traceOf(row: HookRequestRow): TraceContext | undefined {
  if (!row.traceparent || !parseTraceparent(row.traceparent)) return undefined;
  return { traceparent: row.traceparent, tracestate: row.tracestate ?? undefined };
}
