import type pg from "pg";
import type { Clock } from "../clock.js";
import { withTransaction } from "../db/pool.js";
import { listViolations, type ViolationAggregate } from "../db/queries/plan-violations.js";
import { selectSource } from "../db/queries/sources.js";
import { selectStoredCallBodiesById, selectStoredCallIds } from "../db/queries/stored-calls.js";
import { selectTrackingPlan, upsertTrackingPlan, type PlanModeName, type TrackingPlanRow } from "../db/queries/tracking-plans.js";
import { InvalidInputError, NotFoundError } from "../errors.js";
import { compilePlan } from "./compile-plan.js";
import { startInferenceThread } from "./inference-thread.js";
import type { PlanCache } from "./plan-cache.js";
import { readPlanDocument, type PlanDocument } from "./plan-document.js";
import type { ViolationRecorder } from "./violation-recorder.js";

export interface TrackingPlansOptions {
  pool: pg.Pool;
  /** Where inference reads stored calls: the admin reads' pool, with its statement timeout (default: pool). */
  readPool?: pg.Pool;
  clock: Clock;
  /** Told of every change, so that this process applies it to the next call. */
  cache: PlanCache;
  /** Flushed before violations are read, so a list includes what this process counted. */
  recorder: ViolationRecorder;
}

export interface SetPlanInput {
  sourceId: string;
  /** The plan as a value (a Struct)... */
  plan: unknown;
  /** ...or as JSON text, kept byte for byte ("" or undefined: not given). */
  planText?: string | undefined;
  /** undefined: keep the current mode (off for a new plan). */
  mode: PlanModeName | undefined;
  /** The etag last read; "" to replace whatever is there. */
  etag: string;
}

export type SetPlanResult = { plan: TrackingPlanRow } | { conflict: true };

export interface TrackingPlans {
  set(input: SetPlanInput): Promise<SetPlanResult>;
  get(sourceId: string): Promise<TrackingPlanRow | undefined>;
  violations(options: { sourceId: string; since: Date | undefined; limit: number }): Promise<ViolationAggregate[]>;
  /**
   * A plan built from the source's calls received since `since` (the newest
   * 10,000 at most), read a page at a time, within the inference limits, in
   * a worker thread; one inference at a time per process, the next waits.
   */
  infer(sourceId: string, since: Date): Promise<{ plan: PlanDocument; callsRead: number }>;
}

/** Inferring reads at most this many stored calls, the newest. */
export const maxInferredCalls = 10_000;

/** Stored calls read per query while inferring (at most 100 × 32 KB of bodies in memory at once). */
const inferPageSize = 100;

/**
 * The plan and the text to keep: JSON text as given, or a plan given as a
 * value written with a two-space indent (what `waypost plan get` printed).
 */
function readPlanInput(input: SetPlanInput): { plan: unknown; text: string } {
  const given = input.planText !== undefined && input.planText !== "";
  if (given && input.plan !== undefined) throw new InvalidInputError("planJson", "give plan or planJson, not both");
  if (!given) {
    if (input.plan === undefined) throw new InvalidInputError("plan", "is required");
    return { plan: input.plan, text: `${JSON.stringify(input.plan, null, 2)}\n` };
  }
  try {
    return { plan: JSON.parse(input.planText!) as unknown, text: input.planText! };
  } catch (error) {
    throw new InvalidInputError("planJson", `is not JSON: ${(error as Error).message}`);
  }
}

/** The plan's JSON text as it was applied (plans set before the text was kept: written from the stored value). */
export function planText(row: TrackingPlanRow): string {
  return row.plan_text ?? `${JSON.stringify(row.plan, null, 2)}\n`;
}

/** A plan's etag: its revision, opaque to clients. */
export function planEtag(row: TrackingPlanRow): string {
  return `r${row.revision}`;
}

/**
 * Setting, reading and the violations of tracking plans. A plan is checked
 * (shape, and every schema compiled) before it is stored, so a plan that
 * is stored always compiles.
 */
export function createTrackingPlans(options: TrackingPlansOptions): TrackingPlans {
  const { pool } = options;
  // The inference running now (or done): the next starts after it, so that
  // inferences asked at once take one core between them, not all of them.
  let inferring: Promise<unknown> = Promise.resolve();
  async function requireSource(sourceId: string): Promise<void> {
    if (!(await selectSource(pool, sourceId))) throw new NotFoundError("source", sourceId);
  }
  /** Reads the next page while the worker takes in the last: at most two pages of bodies held at once. */
  async function inferInWorker(sourceId: string, since: Date): Promise<{ plan: PlanDocument; callsRead: number }> {
    const reads = options.readPool ?? pool;
    const ids = await selectStoredCallIds(reads, { sourceId, since, limit: maxInferredCalls });
    const thread = startInferenceThread();
    try {
      let callsRead = 0;
      let taking: Promise<void> = Promise.resolve();
      for (let start = 0; start < ids.length; start += inferPageSize) {
        const bodies = await selectStoredCallBodiesById(reads, ids.slice(start, start + inferPageSize));
        await taking;
        taking = thread.add(bodies);
        callsRead += bodies.length;
      }
      await taking;
      return { plan: await thread.plan(`Inferred from ${callsRead} calls since ${since.toISOString()}`), callsRead };
    } finally {
      await thread.close();
    }
  }

  return {
    async set(input) {
      const { plan, text } = readPlanInput(input);
      compilePlan(readPlanDocument(plan));
      await requireSource(input.sourceId);
      const result = await withTransaction(pool, async (tx): Promise<SetPlanResult> => {
        const current = await selectTrackingPlan(tx, input.sourceId, true);
        const currentEtag = current ? planEtag(current) : "";
        if (input.etag !== "" && input.etag !== currentEtag) return { conflict: true };
        const mode = input.mode ?? current?.mode ?? "off";
        return { plan: await upsertTrackingPlan(tx, { sourceId: input.sourceId, plan, planText: text, mode, at: options.clock.now() }) };
      });
      options.cache.forget(input.sourceId);
      return result;
    },
    async get(sourceId) {
      await requireSource(sourceId);
      return selectTrackingPlan(pool, sourceId);
    },
    async violations(query) {
      await requireSource(query.sourceId);
      await options.recorder.flush();
      return listViolations(pool, query);
    },
    async infer(sourceId, since) {
      await requireSource(sourceId);
      const turn = inferring.then(() => inferInWorker(sourceId, since));
      inferring = turn.catch(() => undefined);
      return turn;
    },
  };
}
