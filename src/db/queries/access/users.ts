import type { Queryable } from "../../pool.js";

export interface UserRow {
  id: string;
  issuer: string;
  subject: string;
  email: string;
  name: string;
  role: string;
  role_from_claim: boolean;
  source_ids: string[] | null;
  disabled: boolean;
  created_at: Date;
  last_sign_in_at: Date | null;
}

const columns =
  "u.id, u.issuer, u.subject, u.email, u.name, u.role, u.role_from_claim, u.source_ids, u.disabled, u.created_at, u.last_sign_in_at";

export interface SignedInUser {
  issuer: string;
  subject: string;
  email: string;
  name: string;
  /** From the provider's claim (then set at every sign-in), or undefined: kept, or `defaultRole` for a new user. */
  roleFromClaim: string | undefined;
  defaultRole: string;
  now: Date;
}

/**
 * Creates or refreshes the user of a sign-in. The first user ever to sign
 * in becomes an owner when no role comes from a claim: someone must be able
 * to give out roles without the admin token.
 */
export async function upsertSignedInUser(db: Queryable, user: SignedInUser): Promise<UserRow> {
  const { rows } = await db.query<UserRow>(
    `INSERT INTO users AS u (issuer, subject, email, name, role, role_from_claim, last_sign_in_at)
     VALUES ($1, $2, $3, $4,
             coalesce($5, CASE WHEN NOT EXISTS (SELECT 1 FROM users) THEN 'owner' ELSE $6 END),
             $5 IS NOT NULL, $7)
     ON CONFLICT (issuer, subject) DO UPDATE SET
       email = excluded.email, name = excluded.name, last_sign_in_at = excluded.last_sign_in_at,
       role = CASE WHEN $5 IS NOT NULL THEN $5 ELSE u.role END,
       role_from_claim = $5 IS NOT NULL
     RETURNING ${columns}`,
    [user.issuer, user.subject, user.email, user.name, user.roleFromClaim ?? null, user.defaultRole, user.now],
  );
  return rows[0]!;
}

/** The user of a provider's subject, if they signed in before (a sign-in reads it to judge a disabled user and a claimed role). */
export async function selectUserBySubject(db: Queryable, issuer: string, subject: string): Promise<UserRow | undefined> {
  const { rows } = await db.query<UserRow>(`SELECT ${columns} FROM users u WHERE u.issuer = $1 AND u.subject = $2`, [issuer, subject]);
  return rows[0];
}

export async function selectUser(db: Queryable, id: string): Promise<UserRow | undefined> {
  const { rows } = await db.query<UserRow>(`SELECT ${columns} FROM users u WHERE u.id = $1`, [id]);
  return rows[0];
}

export async function selectUsers(db: Queryable, after: { email: string; id: string } | undefined, limit: number): Promise<UserRow[]> {
  const { rows } = await db.query<UserRow>(
    `SELECT ${columns} FROM users u
      WHERE $1::text IS NULL OR (u.email, u.id) > ($1, $2::uuid)
      ORDER BY u.email, u.id LIMIT $3`,
    [after?.email ?? null, after?.id ?? null, limit],
  );
  return rows;
}

export interface UserChange {
  role?: string;
  sourceIds?: readonly string[] | null;
  disabled?: boolean;
}

export async function updateUser(db: Queryable, id: string, change: UserChange): Promise<UserRow | undefined> {
  const { rows } = await db.query<UserRow>(
    `UPDATE users u SET
       role = CASE WHEN $2 THEN $3 ELSE u.role END,
       source_ids = CASE WHEN $4 THEN $5::uuid[] ELSE u.source_ids END,
       disabled = CASE WHEN $6 THEN $7 ELSE u.disabled END
     WHERE u.id = $1 RETURNING ${columns}`,
    [
      id,
      change.role !== undefined,
      change.role ?? null,
      change.sourceIds !== undefined,
      change.sourceIds ?? null,
      change.disabled !== undefined,
      change.disabled ?? null,
    ],
  );
  return rows[0];
}

export async function countEnabledOwners(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM users WHERE role = 'owner' AND NOT disabled");
  return rows[0]!.n;
}
