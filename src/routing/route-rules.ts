import { compileSubscriptions, type CompiledSubscriptions, type SubscriptionCondition } from "../catalog/subscriptions.js";
import type { HeldBackReason } from "../db/job-table/index.js";
import { compileConsent, type CompiledConsent } from "./consent.js";
import { compileFilter, isPlainObject, type CompiledFilter } from "./filter.js";

/**
 * Why a call gets no delivery at a destination, decided when it is routed
 * (the reason of its FILTERED fate): its filter turned it away, its consent
 * preferences hold it back, or (an integration) no enabled subscription
 * matched it. A transform returning null ("transform") is decided later,
 * when the delivery is sent.
 */
export type { HeldBackReason };

/** A destination's routing rules, compiled once per destination and revision. */
export interface RouteRules {
  filter: CompiledFilter | undefined;
  consent: CompiledConsent | undefined;
  /** Integration destinations only: their subscriptions, each parsed once. */
  subscriptions: CompiledSubscriptions | undefined;
}

/** What a destination row holds of its routing (the columns, as stored). */
export interface RouteSettings {
  filter: Record<string, unknown> | null;
  consentCategories: readonly string[];
  requireConsent: boolean;
  /** The subscriptions of an integration destination (its `integration` column's); undefined for other kinds. */
  subscriptions: readonly SubscriptionCondition[] | undefined;
}

/**
 * Compiles a destination's stored rules. Stored rules were validated when
 * written; a filter that no longer compiles (a stricter version) lets every
 * call through rather than losing it, while an integration without readable
 * subscriptions matches nothing (its actions could not run anyway).
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
    subscriptions: settings.subscriptions ? compileSubscriptions(settings.subscriptions) : undefined,
  };
}

/** Whether the rules can hold any call back (a destination without any is skipped by routing). */
export function holdsBack(rules: RouteRules): boolean {
  return rules.filter !== undefined || rules.consent !== undefined || rules.subscriptions !== undefined;
}

/**
 * Why the rules hold a call back, or undefined when it is routed. The
 * checks run in a fixed order and the first that fails names the reason:
 * the filter, then consent, then (integrations) the subscriptions.
 * `event` gives the call's Segment-shaped event (segmentEventOf): it is
 * asked for only when subscriptions are checked, so callers can build it
 * once per call, lazily, and share it between destinations.
 */
export function heldBackBy(rules: RouteRules, body: unknown, event: () => unknown): HeldBackReason | undefined {
  if (rules.filter && !rules.filter(body)) return "filter";
  if (rules.consent && !rules.consent(body)) return "consent";
  if (rules.subscriptions && !rules.subscriptions.matchesAny(event())) return "subscriptions";
  return undefined;
}

/**
 * The subscriptions stored in an integration destination's `integration`
 * column, read defensively: entries that are not objects are skipped, one
 * without a string `subscribe` is off (it has no condition to match),
 * `enabled` defaults to true.
 */
export function storedSubscriptions(integration: unknown): SubscriptionCondition[] {
  if (!isPlainObject(integration) || !Array.isArray(integration.subscriptions)) return [];
  const list: SubscriptionCondition[] = [];
  for (const entry of integration.subscriptions as unknown[]) {
    if (!isPlainObject(entry)) continue;
    list.push({
      name: typeof entry.name === "string" ? entry.name : "",
      subscribe: typeof entry.subscribe === "string" ? entry.subscribe : "",
      enabled: entry.enabled !== false && typeof entry.subscribe === "string",
    });
  }
  return list;
}
