import { inTransaction, type Queryable } from "../../pool.js";

export interface AuditEventRow {
  id: string;
  at: Date;
  actor_kind: string;
  actor_id: string;
  actor_name: string;
  action: string;
  target_kind: string;
  target_id: string;
  diff: Record<string, unknown> | null;
  outcome: string;
  request_id: string;
  client_address: string;
  user_agent: string;
}

export type NewAuditEvent = Omit<AuditEventRow, "id">;

const columns =
  "id, at, actor_kind, actor_id, actor_name, action, target_kind, target_id, diff, outcome, request_id, client_address, user_agent";

export async function insertAuditEvent(db: Queryable, event: NewAuditEvent): Promise<AuditEventRow> {
  const { rows } = await db.query<AuditEventRow>(
    `INSERT INTO audit_events (at, actor_kind, actor_id, actor_name, action, target_kind, target_id, diff, outcome, request_id, client_address, user_agent)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING ${columns}`,
    [
      event.at,
      event.actor_kind,
      event.actor_id,
      event.actor_name,
      event.action,
      event.target_kind,
      event.target_id,
      event.diff === null ? null : JSON.stringify(event.diff),
      event.outcome,
      event.request_id,
      event.client_address,
      event.user_agent,
    ],
  );
  return rows[0]!;
}

export interface AuditEventFilter {
  actorId?: string | undefined;
  targetId?: string | undefined;
  /** An action, or a prefix ending in ".". */
  action?: string | undefined;
  since?: Date | undefined;
  until?: Date | undefined;
  /** Keyset: events older than this id. */
  beforeId?: string | undefined;
  limit: number;
}

export async function selectAuditEvents(db: Queryable, filter: AuditEventFilter): Promise<AuditEventRow[]> {
  const action = filter.action ?? null;
  const { rows } = await db.query<AuditEventRow>(
    `SELECT ${columns} FROM audit_events
      WHERE ($1::text IS NULL OR actor_id = $1)
        AND ($2::text IS NULL OR target_id = $2)
        AND ($3::text IS NULL OR (CASE WHEN right($3, 1) = '.' THEN starts_with(action, $3) ELSE action = $3 END))
        AND ($4::timestamptz IS NULL OR at >= $4)
        AND ($5::timestamptz IS NULL OR at < $5)
        AND ($6::bigint IS NULL OR id < $6)
      ORDER BY id DESC LIMIT $7`,
    [
      filter.actorId ?? null,
      filter.targetId ?? null,
      action,
      filter.since ?? null,
      filter.until ?? null,
      filter.beforeId ?? null,
      filter.limit,
    ],
  );
  return rows;
}

/** The retention purge: the one way rows leave the append-only log. */
export async function purgeAuditEvents(db: Queryable, before: Date, limit: number): Promise<number> {
  return inTransaction(db, async (tx) => {
    await tx.query("SELECT set_config('waypost.audit_purge', 'on', true)");
    const result = await tx.query("DELETE FROM audit_events WHERE id IN (SELECT id FROM audit_events WHERE at < $1 ORDER BY id LIMIT $2)", [
      before,
      limit,
    ]);
    return result.rowCount ?? 0;
  });
}
