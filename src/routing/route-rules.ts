import type { HeldBackReason } from "../db/job-table/index.js";
import type { KindColumns } from "../db/queries/destinations.js";
import { compileConsent, type CompiledConsent } from "./consent.js";
import { compileFilter, type CompiledFilter } from "./filter.js";

/**
 * Why a call gets no delivery at a destination, decided when it is routed
 * (the reason of its FILTERED fate): its filter turned it away, its consent
 * preferences hold it back, or its kind's own matcher (an integration's
 * subscriptions) wants none of it. A transform returning null ("transform")
 * is decided later, when the delivery is sent.
 */
export type { HeldBackReason };

/** A call as routing looks at it, shared by every destination it is routed to. */
export interface RoutedCall {
  /** The stored call (the webhook body), parsed. */
  readonly body: unknown;
  readonly receivedAt: Date;
  /**
   * `make(call)`, made at most once per call however many destinations ask
   * (keyed by `make`, so one module-level function is one view): a kind's
   * own form of the call, such as an integration's Segment-shaped event.
   */
  view<T>(make: (call: RoutedCall) => T): T;
}

/** A call to route, its views made as they are first asked for. */
export function routedCall(body: unknown, receivedAt: Date): RoutedCall {
  const views = new Map<unknown, unknown>();
  const call: RoutedCall = {
    body,
    receivedAt,
    view<T>(make: (call: RoutedCall) => T): T {
      if (!views.has(make)) views.set(make, make(call));
      return views.get(make) as T;
    },
  };
  return call;
}

/** A destination kind's own test of a call (src/delivery/kinds/kind.ts, `routing`): whether it wants any of it. */
export type CallMatcher = (call: RoutedCall) => boolean;

/**
 * The matcher of a stored destination's kind, from its kind and routing
 * columns; undefined when its kind routes no call itself. Ingest comes
 * before delivery in the domain, so the composition root hands it the
 * kinds' (kinds/registry.ts, matcherOfRow).
 */
export type KindMatcherOf = (row: { kind: string } & Partial<KindColumns>) => CallMatcher | undefined;

/** A destination's routing rules, compiled once per destination and revision. */
export interface RouteRules {
  filter: CompiledFilter | undefined;
  consent: CompiledConsent | undefined;
  /** Its kind's matcher (an integration's subscriptions, each parsed once); undefined when its kind takes every call. */
  matcher: CallMatcher | undefined;
}

/** What a destination holds of its routing: the common columns as stored, and its kind's matcher. */
export interface RouteSettings {
  filter: Record<string, unknown> | null;
  consentCategories: readonly string[];
  requireConsent: boolean;
  matcher: CallMatcher | undefined;
}

/**
 * Compiles a destination's stored rules. Stored rules were validated when
 * written; a filter that no longer compiles (a stricter version) lets every
 * call through rather than losing it (a kind's matcher decides for itself:
 * an integration without readable subscriptions matches nothing, as its
 * actions could not run anyway).
 */
export function compileRouteRules(settings: RouteSettings): RouteRules {
  let filter: CompiledFilter | undefined;
  if (settings.filter && Object.keys(settings.filter).length > 0) {
    try {
      filter = compileFilter(settings.filter);
    } catch {
      filter = undefined;
    }
  }
  return {
    filter,
    consent: compileConsent({ categories: settings.consentCategories, required: settings.requireConsent }),
    matcher: settings.matcher,
  };
}

/** Whether the rules can hold any call back (a destination without any is skipped by routing). */
export function holdsBack(rules: RouteRules): boolean {
  return rules.filter !== undefined || rules.consent !== undefined || rules.matcher !== undefined;
}

/**
 * Why the rules hold a call back, or undefined when it is routed. The
 * checks run in a fixed order and the first that fails names the reason:
 * the filter, then consent, then the kind's matcher ("subscriptions"). The
 * matcher runs last, so a view of the call it needs is made only for calls
 * the common rules let through.
 */
export function heldBackBy(rules: RouteRules, call: RoutedCall): HeldBackReason | undefined {
  if (rules.filter && !rules.filter(call.body)) return "filter";
  if (rules.consent && !rules.consent(call.body)) return "consent";
  if (rules.matcher && !rules.matcher(call)) return "subscriptions";
  return undefined;
}
