import type { Queryable } from "../pool.js";

export interface DeletionRequestRow {
  id: string;
  user_id: string;
  /** The type of user_id's value: "user_id", "anonymous_id" or an operator's type. */
  identifier_type: string;
  source_ids: string[];
  /** bigint columns come back as strings. */
  messages_deleted: string;
  notifications_total: string;
  created_at: Date;
  completed_at: Date | null;
  notifications_delivered: string | null;
  notifications_failed: string | null;
  /** The lake jobs' figures, frozen at completion (lake-deletion-jobs.ts's LakeDeletionProgress, without running). */
  lake_progress: FrozenLakeProgress | null;
}

export interface FrozenLakeProgress {
  lakes: number;
  lakesFailed: number;
  filesScanned: number;
  filesRewritten: number;
  filesDeleted: number;
  rowsDeleted: number;
}

/** The current state of a request's notifications, from their deliveries. */
export interface NotificationProgress {
  delivered: number;
  /** Failed, expired or cancelled: final without having arrived. */
  failed: number;
  /** Pending or retrying. */
  open: number;
  /** When the last one became final (null when none is). */
  lastFinalizedAt: Date | null;
}

const columns = `id, user_id, identifier_type, source_ids, messages_deleted, notifications_total, created_at, completed_at,
  notifications_delivered, notifications_failed, lake_progress`;

export async function insertDeletionRequest(
  db: Queryable,
  request: { id: string; userId: string; identifierType?: string; sourceIds: readonly string[]; messagesDeleted: number; createdAt: Date },
): Promise<void> {
  await db.query(
    `INSERT INTO deletion_requests (id, user_id, identifier_type, source_ids, messages_deleted, notifications_total, created_at)
     VALUES ($1, $2, $3, $4::uuid[], $5, 0, $6)`,
    [request.id, request.userId, request.identifierType ?? "user_id", request.sourceIds, request.messagesDeleted, request.createdAt],
  );
}

export async function setNotificationsTotal(db: Queryable, id: string, total: number): Promise<void> {
  await db.query("UPDATE deletion_requests SET notifications_total = $2 WHERE id = $1", [id, total]);
}

export async function selectDeletionRequest(db: Queryable, id: string): Promise<DeletionRequestRow | undefined> {
  const result = await db.query<DeletionRequestRow>(`SELECT ${columns} FROM deletion_requests WHERE id = $1`, [id]);
  return result.rows[0];
}

/** A page of requests, newest first, after a (created_at, id) keyset cursor. */
export async function listDeletionRequestRows(
  db: Queryable,
  options: { userId: string | undefined; before: { createdAt: string; id: string } | undefined; limit: number },
): Promise<Array<DeletionRequestRow & { cursor_at: string }>> {
  const result = await db.query<DeletionRequestRow & { cursor_at: string }>(
    `SELECT ${columns}, created_at::text AS cursor_at FROM deletion_requests
      WHERE ($1::timestamptz IS NULL OR (created_at, id) < ($1, $2::uuid))
        AND ($3::text IS NULL OR user_id = $3)
      ORDER BY created_at DESC, id DESC LIMIT $4`,
    [options.before?.createdAt ?? null, options.before?.id ?? null, options.userId ?? null, options.limit],
  );
  return result.rows;
}

/** Counts the request's notification deliveries by status (through deliveries_message_idx). */
export async function selectNotificationProgress(db: Queryable, id: string): Promise<NotificationProgress> {
  const result = await db.query<{ delivered: string; failed: string; open: string; last_final: Date | null }>(
    `SELECT count(*) FILTER (WHERE d.status = 'delivered') AS delivered,
            count(*) FILTER (WHERE d.status IN ('failed', 'expired', 'cancelled')) AS failed,
            count(*) FILTER (WHERE d.status IN ('pending', 'retrying')) AS open,
            max(d.finalized_at) AS last_final
       FROM deletion_request_messages l
       JOIN deliveries d ON d.message_pk = l.message_pk
      WHERE l.deletion_request_id = $1`,
    [id],
  );
  const row = result.rows[0]!;
  return {
    delivered: Number(row.delivered),
    failed: Number(row.failed),
    open: Number(row.open),
    lastFinalizedAt: row.last_final,
  };
}

/**
 * Freezes the final figures the first time completion is observed, so they
 * survive the retention purge of the notifications. Idempotent: a request
 * already completed keeps its first figures. Returns the stored row.
 */
export async function markCompleted(
  db: Queryable,
  id: string,
  figures: { completedAt: Date; delivered: number; failed: number; lakes: FrozenLakeProgress },
): Promise<DeletionRequestRow | undefined> {
  const result = await db.query<DeletionRequestRow>(
    `UPDATE deletion_requests
        SET completed_at = coalesce(completed_at, $2),
            notifications_delivered = coalesce(notifications_delivered, $3),
            notifications_failed = coalesce(notifications_failed, $4),
            lake_progress = coalesce(lake_progress, $5)
      WHERE id = $1
      RETURNING ${columns}`,
    [id, figures.completedAt, figures.delivered, figures.failed, figures.lakes],
  );
  return result.rows[0];
}
