import type { Queryable } from "../db/pool.js";
import { filtersStamp, selectSourceFilters } from "../db/queries/source-filters.js";
import { compileFilter, type CompiledFilter } from "../routing/filter.js";

/** The filters a source's calls are routed by, compiled. */
export interface SourceFilters {
  /** Passed to the store statement, which refuses the batch if it no longer holds. */
  stamp: string;
  filters: Array<{ destinationId: string; matches: CompiledFilter }>;
}

export interface SourceFilterCache {
  /** The source's filters, from the cache unless `reload` (the store statement found them stale). */
  get(db: Queryable, sourceId: string, reload?: boolean): Promise<SourceFilters>;
}

/** Most sources kept; past it the cache starts over. */
const maxSources = 10_000;

/**
 * Ingest's cache of compiled filters per source. It needs no invalidation
 * message: the store statement compares the stamp (each filter's destination
 * and revision) with the database's, in the same snapshot it routes in, and
 * a stale batch is stored nothing and retried after a reload. A filter is
 * compiled once per destination and revision, however many sources share it.
 */
export function createSourceFilterCache(): SourceFilterCache {
  const sources = new Map<string, SourceFilters>();
  const compiled = new Map<string, { revision: number; matches: CompiledFilter }>();

  function compiledFor(id: string, revision: number, filter: Record<string, unknown>): CompiledFilter {
    const cached = compiled.get(id);
    if (cached && cached.revision === revision) return cached.matches;
    let matches: CompiledFilter;
    try {
      matches = compileFilter(filter);
    } catch {
      // Stored filters were validated when written; one that no longer
      // compiles (a stricter version) lets every call through rather than losing it.
      matches = () => true;
    }
    if (compiled.size >= maxSources) compiled.clear();
    compiled.set(id, { revision, matches });
    return matches;
  }

  return {
    async get(db, sourceId, reload = false) {
      const cached = sources.get(sourceId);
      if (cached && !reload) return cached;
      const rows = await selectSourceFilters(db, sourceId);
      const loaded: SourceFilters = {
        stamp: filtersStamp(rows),
        filters: rows.map((row) => ({ destinationId: row.id, matches: compiledFor(row.id, row.revision, row.filter) })),
      };
      if (sources.size >= maxSources) sources.clear();
      sources.set(sourceId, loaded);
      return loaded;
    },
  };
}
