import type { Queryable } from "../pool.js";

export type PlanModeName = "off" | "observe" | "omit" | "block";

export interface TrackingPlanRow {
  source_id: string;
  plan: Record<string, unknown>;
  /** The plan's JSON text as applied (null for plans set before it was kept). */
  plan_text: string | null;
  mode: PlanModeName;
  revision: number;
  updated_at: Date;
}

/** The source's plan; `lock` takes the row lock for a read-modify-write. */
export async function selectTrackingPlan(db: Queryable, sourceId: string, lock = false): Promise<TrackingPlanRow | undefined> {
  const result = await db.query<TrackingPlanRow>(
    `SELECT source_id, plan, plan_text, mode, revision, updated_at FROM tracking_plans WHERE source_id = $1${lock ? " FOR UPDATE" : ""}`,
    [sourceId],
  );
  return result.rows[0];
}

/** Only the revision: what ingest's cache checks to know whether its compiled plan is current. */
export async function selectTrackingPlanRevision(db: Queryable, sourceId: string): Promise<number | undefined> {
  const result = await db.query<{ revision: number }>("SELECT revision FROM tracking_plans WHERE source_id = $1", [sourceId]);
  return result.rows[0]?.revision;
}

/** Inserts or replaces the plan, moving the revision on. */
export async function upsertTrackingPlan(
  db: Queryable,
  input: { sourceId: string; plan: unknown; planText: string; mode: PlanModeName; at: Date },
): Promise<TrackingPlanRow> {
  const result = await db.query<TrackingPlanRow>(
    `INSERT INTO tracking_plans (source_id, plan, plan_text, mode, updated_at) VALUES ($1, $2::jsonb, $3, $4, $5)
     ON CONFLICT (source_id) DO UPDATE
       SET plan = excluded.plan, plan_text = excluded.plan_text, mode = excluded.mode, updated_at = excluded.updated_at,
           revision = tracking_plans.revision + 1
     RETURNING source_id, plan, plan_text, mode, revision, updated_at`,
    [input.sourceId, JSON.stringify(input.plan), input.planText, input.mode, input.at],
  );
  return result.rows[0]!;
}
