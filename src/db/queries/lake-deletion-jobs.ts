import type { Queryable } from "../pool.js";

export interface NewLakeDeletionJobs {
  deletionRequestId: string;
  userId: string;
  /** The request's affected sources. */
  sourceIds: readonly string[];
  at: Date;
  /** How long after a lake's flush window its job may start (the flush in flight when the request committed lands first). */
  startDelayMs: number;
}

/**
 * Stores one running lake_deletion job per lake destination (enabled or
 * not: a disabled lake keeps its files) taking from an affected source (the
 * destinations with lake settings: the kind check ties the column to the kind),
 * with the sources it takes from in its params. Its lease is left empty
 * but runs "until" the lake's flushSeconds plus `startDelayMs` from now:
 * no process claims it before then, and it holds no destination's lane
 * meanwhile. Returns how many were stored.
 */
export async function insertLakeDeletionJobs(db: Queryable, jobs: NewLakeDeletionJobs): Promise<number> {
  if (jobs.sourceIds.length === 0) return 0;
  const result = await db.query(
    `INSERT INTO background_jobs (id, kind, destination_id, deletion_request_id, state, params, progress,
                                  lease_until, created_at, updated_at)
     SELECT gen_random_uuid(), 'lake_deletion', d.id, $1, 'running',
            jsonb_build_object('userId', $2::text, 'sourceIds', to_jsonb(array_agg(ds.source_id::text ORDER BY ds.source_id))),
            '{"filesScanned":0,"filesRewritten":0,"filesDeleted":0,"rowsDeleted":0}'::jsonb,
            $4::timestamptz + (coalesce((d.lake->>'flushSeconds')::int, 60) * 1000 + $5::int) * interval '1 millisecond',
            $4, $4
       FROM destinations d JOIN destination_sources ds ON ds.destination_id = d.id
      WHERE d.lake IS NOT NULL AND ds.source_id = ANY($3::uuid[])
      GROUP BY d.id`,
    [jobs.deletionRequestId, jobs.userId, jobs.sourceIds, jobs.at, jobs.startDelayMs],
  );
  return result.rowCount ?? 0;
}

/** A lake destination's settings as stored (the lake column), undefined when it is gone. */
export async function selectLakeSettingsRow(db: Queryable, destinationId: string): Promise<Record<string, unknown> | undefined> {
  const result = await db.query<{ lake: Record<string, unknown> | null }>(
    "SELECT lake FROM destinations WHERE id = $1 AND lake IS NOT NULL",
    [destinationId],
  );
  return result.rows[0]?.lake ?? undefined;
}

/** The lake jobs of a deletion request together. */
export interface LakeDeletionProgress {
  lakes: number;
  running: number;
  /** Failed or cancelled: their files may still hold the user's rows. */
  lakesFailed: number;
  filesScanned: number;
  filesRewritten: number;
  filesDeleted: number;
  rowsDeleted: number;
  /** When the last one ended (null when none has). */
  lastFinishedAt: Date | null;
}

export async function selectLakeDeletionProgress(db: Queryable, deletionRequestId: string): Promise<LakeDeletionProgress> {
  const result = await db.query<Record<string, string | null> & { last_finished: Date | null }>(
    `SELECT count(*) AS lakes,
            count(*) FILTER (WHERE state = 'running') AS running,
            count(*) FILTER (WHERE state IN ('failed', 'cancelled')) AS failed,
            coalesce(sum((progress->>'filesScanned')::bigint), 0) AS files_scanned,
            coalesce(sum((progress->>'filesRewritten')::bigint), 0) AS files_rewritten,
            coalesce(sum((progress->>'filesDeleted')::bigint), 0) AS files_deleted,
            coalesce(sum((progress->>'rowsDeleted')::bigint), 0) AS rows_deleted,
            max(finished_at) AS last_finished
       FROM background_jobs
      WHERE deletion_request_id = $1 AND kind = 'lake_deletion'`,
    [deletionRequestId],
  );
  const row = result.rows[0]!;
  return {
    lakes: Number(row.lakes),
    running: Number(row.running),
    lakesFailed: Number(row.failed),
    filesScanned: Number(row.files_scanned),
    filesRewritten: Number(row.files_rewritten),
    filesDeleted: Number(row.files_deleted),
    rowsDeleted: Number(row.rows_deleted),
    lastFinishedAt: row.last_finished,
  };
}
