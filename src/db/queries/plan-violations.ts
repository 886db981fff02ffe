import type { Queryable } from "../pool.js";

export type ViolationKindName = "unplanned_event" | "required_missing" | "wrong_type" | "unplanned_property" | "other";

/** One aggregate: how often one kind of problem showed at one place. */
export interface ViolationAggregate {
  sourceId: string;
  callType: string;
  event: string;
  path: string;
  kind: ViolationKindName;
  count: number;
  firstSeen: Date;
  lastSeen: Date;
  message: string;
  example: string;
}

/**
 * Adds the aggregates to the stored ones, in one statement. Rows of a
 * source deleted since are skipped (the join), so one gone source does not
 * fail the others' flush.
 */
export async function upsertViolations(db: Queryable, aggregates: readonly ViolationAggregate[]): Promise<void> {
  if (aggregates.length === 0) return;
  const rows = aggregates.map((a) => ({
    s: a.sourceId,
    t: a.callType,
    e: a.event,
    p: a.path,
    k: a.kind,
    c: a.count,
    f: a.firstSeen.toISOString(),
    l: a.lastSeen.toISOString(),
    m: a.message,
    x: a.example,
  }));
  await db.query(
    `INSERT INTO plan_violations (source_id, call_type, event, path, kind, count, first_seen, last_seen, message, example)
     SELECT i.s, i.t, i.e, i.p, i.k, i.c, i.f, i.l, i.m, i.x
       FROM json_to_recordset($1::json) AS i(s uuid, t text, e text, p text, k text, c bigint, f timestamptz, l timestamptz, m text, x text)
       JOIN sources ON sources.id = i.s
     ON CONFLICT (source_id, call_type, event, path, kind) DO UPDATE
       SET count = plan_violations.count + excluded.count,
           first_seen = least(plan_violations.first_seen, excluded.first_seen),
           last_seen = greatest(plan_violations.last_seen, excluded.last_seen),
           -- The most recent example wins, whichever process flushes last.
           message = CASE WHEN excluded.last_seen >= plan_violations.last_seen THEN excluded.message ELSE plan_violations.message END,
           example = CASE WHEN excluded.last_seen >= plan_violations.last_seen THEN excluded.example ELSE plan_violations.example END`,
    [JSON.stringify(rows)],
  );
}

/** The source's violations last seen at or after `since`, most frequent first. */
export async function listViolations(
  db: Queryable,
  options: { sourceId: string; since: Date | undefined; limit: number },
): Promise<ViolationAggregate[]> {
  const result = await db.query<{
    call_type: string;
    event: string;
    path: string;
    kind: ViolationKindName;
    count: string;
    first_seen: Date;
    last_seen: Date;
    message: string;
    example: string;
  }>(
    `SELECT call_type, event, path, kind, count, first_seen, last_seen, message, example FROM plan_violations
      WHERE source_id = $1 AND ($2::timestamptz IS NULL OR last_seen >= $2)
      ORDER BY count DESC, call_type, event, path, kind LIMIT $3`,
    [options.sourceId, options.since ?? null, options.limit],
  );
  return result.rows.map((row) => ({
    sourceId: options.sourceId,
    callType: row.call_type,
    event: row.event,
    path: row.path,
    kind: row.kind,
    count: Number(row.count),
    firstSeen: row.first_seen,
    lastSeen: row.last_seen,
    message: row.message,
    example: row.example,
  }));
}
