import type { BackfillRulesRow } from "../db/queries/background-jobs.js";
import { compileRouteRules, heldBackBy, type RouteRules, routedCall } from "../routing/route-rules.js";
import { matcherOfRow } from "./kinds/registry.js";

/** A destination's routing rules as a backfill applies them now: its filter, consent and its kind's matcher. */
export function backfillRules(destination: BackfillRulesRow): RouteRules {
  return compileRouteRules({
    filter: destination.filter,
    consentCategories: destination.consent_categories,
    requireConsent: destination.require_consent,
    matcher: matcherOfRow(destination),
  });
}

/**
 * Whether the destination's rules route each call (filter, then consent,
 * then its kind's matcher: the same as ingest), a slice at a time,
 * yielding to the event loop between slices. Shared by backfills of
 * retained calls and replays from an archive, so both route alike.
 */
export async function routeInSlices(
  calls: ReadonlyArray<{ payload: string | null; received_at: Date }>,
  rules: RouteRules,
  sliceSize: number,
): Promise<boolean[]> {
  const passes: boolean[] = [];
  for (let start = 0; start < calls.length; start += sliceSize) {
    if (start > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    for (const call of calls.slice(start, start + sliceSize)) {
      const body = JSON.parse(call.payload ?? "{}") as unknown;
      passes.push(heldBackBy(rules, routedCall(body, call.received_at)) === undefined);
    }
  }
  return passes;
}
