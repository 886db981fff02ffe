import { inTransaction, type Queryable } from "../pool.js";
import { removeSourceMessages } from "../job-table/index.js";

export type SourceKindName = "sdk" | "webhook";

export interface SourceRow {
  id: string;
  name: string;
  created_at: Date;
  kind: SourceKindName;
  /** A webhook source's settings as stored (the HookSettings of src/ingest/hooks/hook-settings.ts); null for sdk. */
  webhook: Record<string, unknown> | null;
}

const sourceColumns = "id, name, created_at, kind, webhook";

export interface SourcePageRow extends SourceRow {
  /** created_at as Postgres prints it: microseconds survive the round trip. */
  cursor_at: string;
}

/** A webhook source comes with its settings and its inbound URL token's hash; an sdk source with neither. */
export async function insertSource(
  db: Queryable,
  source: { id: string; name: string; writeKeyHash: Buffer; webhook?: { settings: object; hookTokenHash: Buffer } },
): Promise<SourceRow> {
  const result = await db.query<SourceRow>(
    `INSERT INTO sources (id, name, write_key_hash, kind, webhook, hook_token_hash) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${sourceColumns}`,
    [
      source.id,
      source.name,
      source.writeKeyHash,
      source.webhook ? "webhook" : "sdk",
      source.webhook ? JSON.stringify(source.webhook.settings) : null,
      source.webhook?.hookTokenHash ?? null,
    ],
  );
  return result.rows[0]!;
}

export async function selectSource(db: Queryable, id: string): Promise<SourceRow | undefined> {
  const result = await db.query<SourceRow>(`SELECT ${sourceColumns} FROM sources WHERE id = $1`, [id]);
  return result.rows[0];
}

/** The source locked for an update in `db`'s transaction. */
export async function selectSourceForUpdate(db: Queryable, id: string): Promise<SourceRow | undefined> {
  const result = await db.query<SourceRow>(`SELECT ${sourceColumns} FROM sources WHERE id = $1 FOR UPDATE`, [id]);
  return result.rows[0];
}

/** Sets the name and, when given, the webhook settings; undefined when the source does not exist. */
export async function updateSourceRow(
  db: Queryable,
  id: string,
  fields: { name: string; webhook?: object },
): Promise<SourceRow | undefined> {
  const result = await db.query<SourceRow>(
    `UPDATE sources SET name = $2, webhook = COALESCE($3::jsonb, webhook) WHERE id = $1 RETURNING ${sourceColumns}`,
    [id, fields.name, fields.webhook ? JSON.stringify(fields.webhook) : null],
  );
  return result.rows[0];
}

/** Replaces a webhook source's token hash (the old token stops at once); undefined when no such webhook source. */
export async function updateHookTokenHash(db: Queryable, id: string, hookTokenHash: Buffer): Promise<SourceRow | undefined> {
  const result = await db.query<SourceRow>(
    `UPDATE sources SET hook_token_hash = $2 WHERE id = $1 AND kind = 'webhook' RETURNING ${sourceColumns}`,
    [id, hookTokenHash],
  );
  return result.rows[0];
}

/**
 * The webhook source whose inbound URL token hashes to `hash` (sha256 of the
 * token), with the stored hash for a constant-time check, or undefined.
 */
export async function selectHookSourceByTokenHash(
  db: Queryable,
  hash: Buffer,
): Promise<{ id: string; name: string; webhook: Record<string, unknown>; hook_token_hash: Buffer } | undefined> {
  const result = await db.query<{ id: string; name: string; webhook: Record<string, unknown>; hook_token_hash: Buffer }>(
    "SELECT id, name, webhook, hook_token_hash FROM sources WHERE hook_token_hash = $1 AND kind = 'webhook'",
    [hash],
  );
  return result.rows[0];
}

/** Oldest first, after the (created_at, id) cursor. */
export async function listSourceRows(
  db: Queryable,
  options: { after?: { createdAt: string; id: string } | undefined; limit: number },
): Promise<SourcePageRow[]> {
  const result = await db.query<SourcePageRow>(
    `SELECT ${sourceColumns}, created_at::text AS cursor_at FROM sources
      WHERE $1::timestamptz IS NULL OR (created_at, id) > ($1, $2::uuid)
      ORDER BY created_at, id LIMIT $3`,
    [options.after?.createdAt ?? null, options.after?.id ?? null, options.limit],
  );
  return result.rows;
}

/** Replaces the write key's hash; undefined when the source does not exist. */
export async function updateWriteKeyHash(db: Queryable, id: string, writeKeyHash: Buffer): Promise<SourceRow | undefined> {
  const result = await db.query<SourceRow>(`UPDATE sources SET write_key_hash = $2 WHERE id = $1 RETURNING ${sourceColumns}`, [
    id,
    writeKeyHash,
  ]);
  return result.rows[0];
}

/**
 * Deletes a source with its messages (and their deliveries, attempts and
 * fates), webhook requests, lease and plan violations, in one transaction
 * (the pool's own, or the caller's). Tables that are Citus reference
 * tables (tracking plans, audiences, links to destinations) keep their
 * cascading foreign keys; the rest is deleted here, since Citus runs no
 * triggers and no cascades from a reference table into the others. The
 * source's row goes first: its deletion waits for stores holding the
 * source's lock, and the messages' deletes, later statements, see what they
 * stored. False when it did not exist.
 */
export async function deleteSourceRow(db: Queryable, id: string): Promise<boolean> {
  return inTransaction(db, async (tx) => {
    // Locked first: this waits for every store holding the source's key
    // share (FOR KEY SHARE) to commit, and a store after it finds no source.
    const found = await tx.query("SELECT 1 FROM sources WHERE id = $1 FOR UPDATE", [id]);
    if ((found.rowCount ?? 0) === 0) return false;
    // Its rows in the reference tables, children first (their keys do not cascade).
    await tx.query("DELETE FROM destination_sources WHERE source_id = $1", [id]);
    await tx.query("DELETE FROM audience_members WHERE audience_id IN (SELECT id FROM audiences WHERE source_id = $1)", [id]);
    await tx.query("DELETE FROM audiences WHERE source_id = $1", [id]);
    await tx.query("DELETE FROM tracking_plans WHERE source_id = $1", [id]);
    await tx.query("DELETE FROM sources WHERE id = $1", [id]);
    await removeSourceMessages(tx, id);
    await tx.query("DELETE FROM hook_requests WHERE source_id = $1", [id]);
    await tx.query("DELETE FROM hook_source_leases WHERE source_id = $1", [id]);
    await tx.query("DELETE FROM plan_violations WHERE source_id = $1", [id]);
    return true;
  });
}

/** The source whose write key hashes to `hash`, with the stored hash (for a constant-time check). */
export async function selectSourceByWriteKeyHash(db: Queryable, hash: Buffer): Promise<{ id: string; write_key_hash: Buffer } | undefined> {
  const result = await db.query<{ id: string; write_key_hash: Buffer }>(
    "SELECT id, write_key_hash FROM sources WHERE write_key_hash = $1",
    [hash],
  );
  return result.rows[0];
}
