import type { Queryable } from "../../pool.js";

export interface ApiTokenRow {
  id: string;
  name: string;
  prefix: string;
  role: string | null;
  scopes: string[];
  source_ids: string[] | null;
  user_id: string | null;
  created_by: string;
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  last_used_address: string | null;
}

/** A token row with what its credential check needs: the owner's state. */
export interface ApiTokenCredentialRow extends ApiTokenRow {
  secret_hash: Buffer;
  user_disabled: boolean | null;
  user_role: string | null;
  user_source_ids: string[] | null;
  user_email: string | null;
}

const columns = `t.id, t.name, t.prefix, t.role, t.scopes, t.source_ids, t.user_id, t.created_by, t.created_at,
  t.expires_at, t.revoked_at, t.last_used_at, t.last_used_address`;

export interface NewApiToken {
  name: string;
  secretHash: Buffer;
  prefix: string;
  role: string | null;
  scopes: readonly string[];
  sourceIds: readonly string[] | null;
  userId: string | null;
  createdBy: string;
  expiresAt: Date | null;
  now: Date;
}

export async function insertApiToken(db: Queryable, token: NewApiToken): Promise<ApiTokenRow> {
  const { rows } = await db.query<ApiTokenRow>(
    `INSERT INTO api_tokens AS t (name, secret_hash, prefix, role, scopes, source_ids, user_id, created_by, expires_at, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ${columns}`,
    [token.name, token.secretHash, token.prefix, token.role, token.scopes, token.sourceIds, token.userId, token.createdBy, token.expiresAt, token.now],
  );
  return rows[0]!;
}

/** The token whose secret hashes to `hash`, whatever its state (the caller judges expiry and revocation). */
export async function selectApiTokenByHash(db: Queryable, hash: Buffer): Promise<ApiTokenCredentialRow | undefined> {
  const { rows } = await db.query<ApiTokenCredentialRow>(
    `SELECT ${columns}, t.secret_hash, u.disabled AS user_disabled, u.role AS user_role,
            u.source_ids AS user_source_ids, u.email AS user_email
       FROM api_tokens t LEFT JOIN users u ON u.id = t.user_id
      WHERE t.secret_hash = $1`,
    [hash],
  );
  return rows[0];
}

/** Records a use; at most once a minute per token, so a busy token costs no write per request. */
export async function recordApiTokenUse(db: Queryable, id: string, address: string, now: Date): Promise<void> {
  await db.query(
    `UPDATE api_tokens SET last_used_at = $2, last_used_address = $3
      WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2::timestamptz - interval '1 minute' OR last_used_address IS DISTINCT FROM $3)`,
    [id, now, address],
  );
}

export interface ApiTokenListing {
  /** Only this user's tokens; undefined: everyone's. */
  userId: string | undefined;
  includeInactive: boolean;
  now: Date;
  /** Keyset: tokens created before this (created_at, id). */
  after: { createdAt: Date; id: string } | undefined;
  limit: number;
}

export async function selectApiTokens(db: Queryable, listing: ApiTokenListing): Promise<ApiTokenRow[]> {
  const { rows } = await db.query<ApiTokenRow>(
    `SELECT ${columns} FROM api_tokens t
      WHERE ($1::uuid IS NULL OR t.user_id = $1)
        AND ($2 OR (t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > $3)))
        AND ($4::timestamptz IS NULL OR (t.created_at, t.id) < ($4, $5::uuid))
      ORDER BY t.created_at DESC, t.id DESC LIMIT $6`,
    [listing.userId ?? null, listing.includeInactive, listing.now, listing.after?.createdAt ?? null, listing.after?.id ?? null, listing.limit],
  );
  return rows;
}

export async function selectApiToken(db: Queryable, id: string): Promise<ApiTokenRow | undefined> {
  const { rows } = await db.query<ApiTokenRow>(`SELECT ${columns} FROM api_tokens t WHERE t.id = $1`, [id]);
  return rows[0];
}

export async function revokeApiToken(db: Queryable, id: string, now: Date): Promise<ApiTokenRow | undefined> {
  const { rows } = await db.query<ApiTokenRow>(
    `UPDATE api_tokens t SET revoked_at = coalesce(t.revoked_at, $2) WHERE t.id = $1 RETURNING ${columns}`,
    [id, now],
  );
  return rows[0];
}
