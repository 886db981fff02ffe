import type { ClaimedDelivery } from "../db/job-table/index.js";
import type { Queryable } from "../db/pool.js";
import { loadDestinationConfigs } from "../db/queries/destinations.js";
import { type AnyDestination, destinationOfRow } from "./kinds/registry.js";

export interface DestinationSettings {
  /**
   * Reads the settings of the claimed deliveries' destinations whose
   * revision moved (or that are new here): once per destination and
   * revision, not once per claim. The claim reads the revision in its own
   * snapshot, so a change applies to every delivery claimed after it commits.
   */
  refresh(claimed: readonly ClaimedDelivery[]): Promise<void>;
  /** The settings a delivery claimed now is sent with; undefined: the destination is gone. */
  get(destinationId: string): AnyDestination | undefined;
  /** Whether the destination delivers each user's calls in order, as of its last claim here. */
  isOrdered(destinationId: string): boolean;
}

/** Most destinations kept; past it the cache starts over (destinations not claimed lately are read again when they are). */
const maxCached = 10_000;

/** The delivery loop's cache of destination settings, keyed by id and checked by revision. */
export function createDestinationSettings(options: { pool: Queryable }): DestinationSettings {
  const configs = new Map<string, AnyDestination>();
  const ordered = new Set<string>();
  return {
    async refresh(claimed) {
      const seen = new Map<string, number | null>();
      for (const job of claimed) seen.set(job.destinationId, job.destinationRevision);
      const stale = [...seen].filter(([id, revision]) => revision === null || configs.get(id)?.revision !== revision).map(([id]) => id);
      if (stale.length > 0) {
        if (configs.size + stale.length > maxCached) configs.clear();
        const loaded = await loadDestinations(options.pool, stale);
        for (const id of stale) {
          const row = loaded.get(id);
          if (row) configs.set(id, row);
          else configs.delete(id);
        }
      }
      for (const id of seen.keys()) {
        if (configs.get(id)?.ordering === "per_user") ordered.add(id);
        else ordered.delete(id);
      }
    },
    get: (destinationId) => configs.get(destinationId),
    isOrdered: (destinationId) => ordered.has(destinationId),
  };
}

/** The current settings of these destinations, each read by its kind (missing: deleted). */
export async function loadDestinations(pool: Queryable, ids: readonly string[]): Promise<Map<string, AnyDestination>> {
  const rows = await loadDestinationConfigs(pool, ids);
  return new Map([...rows].map(([id, row]) => [id, destinationOfRow(row)]));
}
