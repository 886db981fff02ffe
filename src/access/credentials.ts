import { createHash, timingSafeEqual } from "node:crypto";
import type { Clock } from "../clock.js";
import { type ApiTokenCredentialRow, recordApiTokenUse, selectApiTokenByHash } from "../db/queries/access/api-tokens.js";
import { touchSession } from "../db/queries/access/user-sessions.js";
import type { UserRow } from "../db/queries/access/users.js";
import type { Queryable } from "../db/pool.js";
import { adminTokenPrincipal, type Principal } from "./principal.js";
import { isRole, isScope, type RoleName, roleCovering, type Scope, scopesOf } from "./roles.js";
import { hashTokenSecret, looksLikeTokenSecret } from "./token-secret.js";

export interface CredentialOptions {
  pool: Queryable;
  clock: Clock;
  adminToken: string;
  sessions: SessionTimeouts;
}

export interface SessionTimeouts {
  /** A session unused this long ends. */
  idleMs: number;
  /** A session ends this long after sign-in, used or not. */
  absoluteMs: number;
}

/** Why a credential was refused: the text of an `unauthenticated` answer. */
export class CredentialRefused extends Error {}

export interface Credentials {
  /** The principal of a bearer credential (admin token or API token). */
  bearer(secret: string, clientAddress: string): Promise<Principal | CredentialRefused>;
  /** The principal of a console session's cookie value. */
  session(sessionId: string): Promise<Principal | CredentialRefused>;
}

export function hashSessionId(sessionId: string): Buffer {
  return createHash("sha256").update(sessionId, "utf8").digest();
}

/**
 * Turns a credential into a principal, reading Postgres on every request:
 * a revoked token, a disabled user or a revoked session stops working at
 * its next request, in every process.
 */
export function createCredentials(options: CredentialOptions): Credentials {
  const adminHash = createHash("sha256").update(options.adminToken).digest();
  const isAdminToken = (secret: string) => timingSafeEqual(createHash("sha256").update(secret).digest(), adminHash);

  async function bearer(secret: string, clientAddress: string): Promise<Principal | CredentialRefused> {
    if (isAdminToken(secret)) return adminTokenPrincipal;
    if (!looksLikeTokenSecret(secret)) return new CredentialRefused("admin token or API token required (Authorization: Bearer <token>)");
    const hash = hashTokenSecret(secret);
    const row = await selectApiTokenByHash(options.pool, hash);
    if (!row || !timingSafeEqual(row.secret_hash, hash)) return new CredentialRefused("unknown API token");
    const now = options.clock.now();
    if (row.revoked_at) return new CredentialRefused(`API token ${row.prefix}… was revoked`);
    if (row.expires_at && row.expires_at <= now) return new CredentialRefused(`API token ${row.prefix}… expired`);
    if (row.user_id && (row.user_disabled ?? true)) return new CredentialRefused(`API token ${row.prefix}…: its user is disabled`);
    await recordApiTokenUse(options.pool, row.id, clientAddress, now);
    return tokenPrincipal(row);
  }

  async function session(sessionId: string): Promise<Principal | CredentialRefused> {
    const now = options.clock.now();
    const idleSince = new Date(now.getTime() - options.sessions.idleMs);
    const found = await touchSession(options.pool, hashSessionId(sessionId), now, idleSince);
    if (!found) return new CredentialRefused("session ended: sign in again");
    return { ...userPrincipal(found.user), csrfToken: found.csrf_token };
  }

  return { bearer, session };
}

export function userPrincipal(user: UserRow): Principal {
  const role = isRole(user.role) ? user.role : "viewer";
  return {
    kind: "user",
    id: user.id,
    name: user.email,
    role,
    scopes: scopesOf(role),
    sourceIds: user.source_ids ?? undefined,
    userId: user.id,
  };
}

/** A token's scopes, capped by its person's current role and sources: lowering a role lowers their tokens. */
function tokenPrincipal(row: ApiTokenCredentialRow): Principal {
  let scopes: Set<Scope> = row.role && isRole(row.role) ? new Set(scopesOf(row.role)) : new Set(row.scopes.filter(isScope));
  let sourceIds: readonly string[] | undefined = row.source_ids ?? undefined;
  if (row.user_id && row.user_role && isRole(row.user_role)) {
    const ceiling = scopesOf(row.user_role);
    scopes = new Set([...scopes].filter((scope) => ceiling.has(scope)));
    sourceIds = intersectLimits(sourceIds, row.user_source_ids ?? undefined);
  }
  const role: RoleName = row.role && isRole(row.role) && scopes.size === scopesOf(row.role).size ? row.role : roleCovering(scopes);
  return { kind: "token", id: row.id, name: row.name, role, scopes, sourceIds, userId: row.user_id ?? undefined };
}

/** Two source limits together: undefined is no limit. */
export function intersectLimits(a: readonly string[] | undefined, b: readonly string[] | undefined): readonly string[] | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return a.filter((id) => b.includes(id));
}
