import type { Queryable } from "../../pool.js";
import type { UserRow } from "./users.js";

export interface NewSession {
  idHash: Buffer;
  userId: string;
  csrfToken: string;
  now: Date;
  expiresAt: Date;
  clientAddress: string;
  userAgent: string;
}

export async function insertSession(db: Queryable, session: NewSession): Promise<void> {
  await db.query(
    `INSERT INTO user_sessions (id_hash, user_id, csrf_token, created_at, last_seen_at, expires_at, client_address, user_agent)
     VALUES ($1, $2, $3, $4, $4, $5, $6, $7)`,
    [session.idHash, session.userId, session.csrfToken, session.now, session.expiresAt, session.clientAddress, session.userAgent],
  );
}

export interface SessionWithUser {
  csrf_token: string;
  last_seen_at: Date;
  user: UserRow;
}

/**
 * The live session of `idHash` and its user, marking it seen: a revoked,
 * expired or idle session (last seen before `idleSince`), or one whose
 * user is disabled, is no session.
 */
export async function touchSession(db: Queryable, idHash: Buffer, now: Date, idleSince: Date): Promise<SessionWithUser | undefined> {
  const { rows } = await db.query<{ csrf_token: string; last_seen_at: Date; user: UserRow }>(
    `UPDATE user_sessions s SET last_seen_at = $2
       FROM users u
      WHERE s.id_hash = $1 AND u.id = s.user_id AND NOT u.disabled
        AND s.revoked_at IS NULL AND s.expires_at > $2 AND s.last_seen_at > $3
     RETURNING s.csrf_token, s.last_seen_at, row_to_json(u) AS user`,
    [idHash, now, idleSince],
  );
  const row = rows[0];
  if (!row) return undefined;
  const user = row.user as unknown as UserRow & { created_at: string; last_sign_in_at: string | null };
  return {
    csrf_token: row.csrf_token,
    last_seen_at: row.last_seen_at,
    user: { ...user, created_at: new Date(user.created_at), last_sign_in_at: user.last_sign_in_at ? new Date(user.last_sign_in_at) : null },
  };
}

export async function revokeSession(db: Queryable, idHash: Buffer, now: Date): Promise<void> {
  await db.query("UPDATE user_sessions SET revoked_at = coalesce(revoked_at, $2) WHERE id_hash = $1", [idHash, now]);
}

export async function revokeUserSessions(db: Queryable, userId: string, now: Date): Promise<number> {
  const result = await db.query("UPDATE user_sessions SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2", [
    userId,
    now,
  ]);
  return result.rowCount ?? 0;
}

/** Sessions and sign-in attempts that can no longer be used. */
export async function deleteEndedSessions(db: Queryable, now: Date, idleSince: Date): Promise<number> {
  const sessions = await db.query("DELETE FROM user_sessions WHERE expires_at < $1 OR revoked_at IS NOT NULL OR last_seen_at < $2", [
    now,
    idleSince,
  ]);
  await db.query("DELETE FROM sign_in_attempts WHERE expires_at < $1", [now]);
  return sessions.rowCount ?? 0;
}
