import { type RoleName, type Scope, scopesOf } from "./roles.js";

/**
 * Who made an admin request, and what it may do. Every credential becomes
 * one: the admin token (the break glass, an owner), a console session of a
 * person, or an API token of a person or a service account.
 */
export interface Principal {
  kind: "admin-token" | "user" | "token";
  /** The user's id, the token's id, or "admin-token". */
  id: string;
  /** What the audit log and the console show: an email, a token's name. */
  name: string;
  /** The role it holds, or the lowest role covering its scopes (a token with explicit scopes). */
  role: RoleName;
  scopes: ReadonlySet<Scope>;
  /** Undefined: every source. Otherwise only these and the destinations that read only from them. */
  sourceIds: readonly string[] | undefined;
  /** The person behind a session or a person's token (service accounts and the admin token have none). */
  userId: string | undefined;
  /** A session's CSRF token (the console sends it back on every change). */
  csrfToken?: string;
}

export const adminTokenPrincipal: Principal = {
  kind: "admin-token",
  id: "admin-token",
  name: "admin token",
  role: "owner",
  scopes: scopesOf("owner"),
  sourceIds: undefined,
  userId: undefined,
};

/** Whether `principal` may reach `sourceId` (no limit reaches every source). */
export function reachesSource(principal: Principal, sourceId: string): boolean {
  return principal.sourceIds === undefined || principal.sourceIds.includes(sourceId);
}

/** Whether every one of `sourceIds` is in reach; an empty list means every source, so only an unlimited principal reaches it. */
export function reachesSources(principal: Principal, sourceIds: readonly string[]): boolean {
  if (principal.sourceIds === undefined) return true;
  return sourceIds.length > 0 && sourceIds.every((id) => reachesSource(principal, id));
}
