import type pg from "pg";
import { systemClock, type Clock } from "../clock.js";
import { selectTrackingPlan, selectTrackingPlanRevision, type PlanModeName } from "../db/queries/tracking-plans.js";
import type { Logger } from "../logger.js";
import { compilePlan, type CompiledPlan } from "./compile-plan.js";
import { readPlanDocument } from "./plan-document.js";

/** A source's plan as ingest applies it. */
export interface ActivePlan {
  revision: number;
  mode: Exclude<PlanModeName, "off">;
  compiled: CompiledPlan;
}

export interface PlanCacheOptions {
  pool: pg.Pool;
  logger?: Pick<Logger, "warn">;
  /**
   * How long a source's plan is used before its revision is read again.
   * A change made through this process applies at once (forget); one made
   * through another process applies within this time.
   */
  checkIntervalMs?: number;
  /** Time for the interval: the process's clock, so tests can move past it. */
  clock?: Clock;
}

export interface PlanCache {
  /** The source's plan in force, or undefined (none, or mode off). Reads the database at most once per interval. */
  forSource(sourceId: string): ActivePlan | undefined | Promise<ActivePlan | undefined>;
  /** Drops what is known of the source, so that the next call reads its plan again. */
  forget(sourceId: string): void;
}

interface Entry {
  revision: number | undefined;
  plan: ActivePlan | undefined;
  checkedAt: number;
  refreshing: Promise<ActivePlan | undefined> | undefined;
}

/**
 * Ingest's view of the tracking plans: compiled once per plan revision and
 * kept per source. Each call costs a map lookup; at most once per interval
 * per source, one short query reads the revision alone, and only a new
 * revision reads and compiles the plan. Concurrent calls share the read.
 */
export function createPlanCache(options: PlanCacheOptions): PlanCache {
  const interval = options.checkIntervalMs ?? 1000;
  const clock = options.clock ?? systemClock;
  const now = () => clock.now().getTime();
  const entries = new Map<string, Entry>();
  // Moves on with every forget: a read that began before a change does not store what it read.
  let epoch = 0;

  async function refresh(sourceId: string, entry: Entry | undefined): Promise<ActivePlan | undefined> {
    const startEpoch = epoch;
    const revision = await selectTrackingPlanRevision(options.pool, sourceId);
    if (entry && entry.revision === revision && entries.get(sourceId) === entry) {
      entry.checkedAt = now();
      return entry.plan;
    }
    const plan = revision === undefined ? undefined : await load(sourceId);
    const checkedAt = now();
    if (startEpoch !== epoch) return plan;
    entries.set(sourceId, { revision: plan?.revision ?? revision, plan, checkedAt, refreshing: undefined });
    return plan;
  }

  async function load(sourceId: string): Promise<ActivePlan | undefined> {
    const row = await selectTrackingPlan(options.pool, sourceId);
    if (!row || row.mode === "off") return undefined;
    try {
      return { revision: row.revision, mode: row.mode, compiled: compilePlan(readPlanDocument(row.plan)) };
    } catch (error) {
      // Plans are checked when set; this guards a plan stored by an older version.
      options.logger?.warn({ err: error, sourceId }, "the stored tracking plan does not compile; it is not applied");
      return undefined;
    }
  }

  return {
    forSource(sourceId) {
      const entry = entries.get(sourceId);
      if (entry && now() - entry.checkedAt < interval) return entry.plan;
      if (entry?.refreshing) return entry.refreshing;
      const refreshing = refresh(sourceId, entry).finally(() => {
        const current = entries.get(sourceId);
        if (current) current.refreshing = undefined;
      });
      if (entry) entry.refreshing = refreshing;
      return refreshing;
    },
    forget(sourceId) {
      epoch += 1;
      entries.delete(sourceId);
    },
  };
}
