import type { Queryable } from "../pool.js";

export interface SourceRow {
  id: string;
  name: string;
  created_at: Date;
}

export interface SourcePageRow extends SourceRow {
  /** created_at as Postgres prints it: microseconds survive the round trip. */
  cursor_at: string;
}

export async function insertSource(db: Queryable, source: { id: string; name: string; writeKeyHash: Buffer }): Promise<SourceRow> {
  const result = await db.query<SourceRow>(
    "INSERT INTO sources (id, name, write_key_hash) VALUES ($1, $2, $3) RETURNING id, name, created_at",
    [source.id, source.name, source.writeKeyHash],
  );
  return result.rows[0]!;
}

export async function selectSource(db: Queryable, id: string): Promise<SourceRow | undefined> {
  const result = await db.query<SourceRow>("SELECT id, name, created_at FROM sources WHERE id = $1", [id]);
  return result.rows[0];
}

/** Oldest first, after the (created_at, id) cursor. */
export async function listSourceRows(
  db: Queryable,
  options: { after?: { createdAt: string; id: string } | undefined; limit: number },
): Promise<SourcePageRow[]> {
  const result = await db.query<SourcePageRow>(
    `SELECT id, name, created_at, created_at::text AS cursor_at FROM sources
      WHERE $1::timestamptz IS NULL OR (created_at, id) > ($1, $2::uuid)
      ORDER BY created_at, id LIMIT $3`,
    [options.after?.createdAt ?? null, options.after?.id ?? null, options.limit],
  );
  return result.rows;
}

/** Replaces the write key's hash; undefined when the source does not exist. */
export async function updateWriteKeyHash(db: Queryable, id: string, writeKeyHash: Buffer): Promise<SourceRow | undefined> {
  const result = await db.query<SourceRow>("UPDATE sources SET write_key_hash = $2 WHERE id = $1 RETURNING id, name, created_at", [
    id,
    writeKeyHash,
  ]);
  return result.rows[0];
}

/** Deletes a source with its messages and deliveries (ON DELETE CASCADE); false when it did not exist. */
export async function deleteSourceRow(db: Queryable, id: string): Promise<boolean> {
  const result = await db.query("DELETE FROM sources WHERE id = $1", [id]);
  return (result.rowCount ?? 0) > 0;
}

/** The source whose write key hashes to `hash`, with the stored hash (for a constant-time check). */
export async function selectSourceByWriteKeyHash(db: Queryable, hash: Buffer): Promise<{ id: string; write_key_hash: Buffer } | undefined> {
  const result = await db.query<{ id: string; write_key_hash: Buffer }>(
    "SELECT id, write_key_hash FROM sources WHERE write_key_hash = $1",
    [hash],
  );
  return result.rows[0];
}
