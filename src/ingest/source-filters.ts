import type { Queryable } from "../db/pool.js";
import { filtersStamp, selectSourceFilters, type SourceFilterRow } from "../db/queries/source-filters.js";
import {
  compileRouteRules,
  heldBackBy,
  type HeldBackReason,
  type KindMatcherOf,
  type RouteRules,
  routedCall,
} from "../routing/route-rules.js";

/** The rules a source's calls are routed by, compiled: of the destinations that can hold a call back. */
export interface SourceFilters {
  /** Passed to the store statement, which refuses the batch if it no longer holds. */
  stamp: string;
  filters: Array<{ destinationId: string; rules: RouteRules }>;
}

export interface SourceFilterCache {
  /** The source's rules, from the cache unless `reload` (the store statement found them stale). */
  get(db: Queryable, sourceId: string, reload?: boolean): Promise<SourceFilters>;
}

/** Most sources kept; past it the cache starts over. */
const maxSources = 10_000;

/**
 * Ingest's cache of compiled routing rules per source (filter, consent, the
 * kind's matcher by `matcherOf`: an integration's subscriptions). It needs
 * no invalidation message: the store statement compares the stamp (each
 * destination and revision) with the database's, in the same snapshot it
 * routes in, and a stale batch is stored nothing and retried after a
 * reload. Rules are compiled once per destination and revision, however
 * many sources share them: a subscription is parsed once, not per call.
 */
export function createSourceFilterCache(matcherOf: KindMatcherOf): SourceFilterCache {
  const sources = new Map<string, SourceFilters>();
  const compiled = new Map<string, { revision: number; rules: RouteRules }>();

  function compiledFor(row: SourceFilterRow): RouteRules {
    const cached = compiled.get(row.id);
    if (cached && cached.revision === row.revision) return cached.rules;
    const rules = compileRouteRules({
      filter: row.filter,
      consentCategories: row.consent_categories,
      requireConsent: row.require_consent,
      matcher: matcherOf(row),
    });
    if (compiled.size >= maxSources) compiled.clear();
    compiled.set(row.id, { revision: row.revision, rules });
    return rules;
  }

  return {
    async get(db, sourceId, reload = false) {
      const cached = sources.get(sourceId);
      if (cached && !reload) return cached;
      const rows = await selectSourceFilters(db, sourceId);
      const loaded: SourceFilters = {
        stamp: filtersStamp(rows),
        filters: rows.map((row) => ({ destinationId: row.id, rules: compiledFor(row) })),
      };
      if (sources.size >= maxSources) sources.clear();
      sources.set(sourceId, loaded);
      return loaded;
    },
  };
}

/**
 * The destinations that hold the call back, and why (destination id to
 * reason), or undefined when none does. The body is the stored call; a
 * kind's view of it (an integration's Segment-shaped event) is made at most
 * once, and only if a matcher asks for it.
 */
export function heldBackFrom(filters: SourceFilters, body: unknown, receivedAt: Date): Record<string, HeldBackReason> | undefined {
  let held: Record<string, HeldBackReason> | undefined;
  const call = routedCall(body, receivedAt);
  for (const { destinationId, rules } of filters.filters) {
    const reason = heldBackBy(rules, call);
    if (reason) (held ??= {})[destinationId] = reason;
  }
  return held;
}
