import { inTransaction, type Queryable } from "../pool.js";

export type AudienceKindName = "audience" | "computed_trait";

export interface AudienceRow {
  id: string;
  source_id: string;
  name: string;
  key: string;
  kind: AudienceKindName;
  /** Syncs list profile ids, sent to each person's userId. */
  by_profile: boolean;
  /** bigint: pg returns it as a string. */
  member_count: string;
  created_at: Date;
  last_synced_at: Date | null;
  /** created_at as Postgres prints it: microseconds survive the round trip (page cursors). */
  cursor_at: string;
}

const columns = "id, source_id, name, key, kind, by_profile, member_count, created_at, last_synced_at, created_at::text AS cursor_at";

export interface NewAudience {
  id: string;
  sourceId: string;
  name: string;
  key: string;
  kind: AudienceKindName;
  byProfile?: boolean;
  createdAt: Date;
}

/**
 * Inserts an audience. Returns undefined when the source already has one
 * with the same key (the unique constraint decides, so two concurrent
 * creates cannot both win).
 */
export async function insertAudience(db: Queryable, audience: NewAudience): Promise<AudienceRow | undefined> {
  const result = await db.query<AudienceRow>(
    `INSERT INTO audiences (id, source_id, name, key, kind, by_profile, created_at)
     VALUES ($1, $2, $3, $4, $5, $7, $6)
     ON CONFLICT (source_id, key) DO NOTHING
     RETURNING ${columns}`,
    [audience.id, audience.sourceId, audience.name, audience.key, audience.kind, audience.createdAt, audience.byProfile ?? false],
  );
  return result.rows[0];
}

/** One audience; `forUpdate` locks it, which serialises the syncs of one audience. */
export async function selectAudience(db: Queryable, id: string, forUpdate = false): Promise<AudienceRow | undefined> {
  const result = await db.query<AudienceRow>(`SELECT ${columns} FROM audiences WHERE id = $1 ${forUpdate ? "FOR UPDATE" : ""}`, [id]);
  return result.rows[0];
}

/** A page of audiences in creation order, optionally of one source. */
export async function listAudienceRows(
  db: Queryable,
  options: { sourceId: string | undefined; after: { createdAt: string; id: string } | undefined; limit: number },
): Promise<AudienceRow[]> {
  const result = await db.query<AudienceRow>(
    `SELECT ${columns} FROM audiences
      WHERE ($1::timestamptz IS NULL OR (created_at, id) > ($1, $2::uuid))
        AND ($3::uuid IS NULL OR source_id = $3)
      ORDER BY created_at, id LIMIT $4`,
    [options.after?.createdAt ?? null, options.after?.id ?? null, options.sourceId ?? null, options.limit],
  );
  return result.rows;
}

/** Deletes an audience and its stored membership (first: the key does not cascade), in one transaction. False when it did not exist. */
export async function deleteAudience(db: Queryable, id: string): Promise<boolean> {
  return inTransaction(db, async (tx) => {
    await tx.query("DELETE FROM audience_members WHERE audience_id = $1", [id]);
    const result = await tx.query("DELETE FROM audiences WHERE id = $1", [id]);
    return (result.rowCount ?? 0) > 0;
  });
}

/** Whether a source exists. */
export async function sourceExists(db: Queryable, sourceId: string): Promise<boolean> {
  const result = await db.query("SELECT 1 FROM sources WHERE id = $1", [sourceId]);
  return (result.rowCount ?? 0) > 0;
}
