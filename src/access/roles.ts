// What each role may do, as scopes. The RPC table (api/access/rpc-scopes.ts)
// names the one scope each admin RPC needs; a role is only a named set of
// scopes, so a token may hold a role or an explicit list.

export const roles = ["viewer", "editor", "admin", "owner"] as const;
export type RoleName = (typeof roles)[number];

/** Reads: what a viewer holds. */
const readScopes = [
  "sources:read",
  "destinations:read",
  "deliveries:read",
  "plans:read",
  "audiences:read",
  "deletions:read",
  "hooks:read",
  "integrations:read",
  "profiles:read",
] as const;

/** Changes to what calls go through: sources, destinations, plans, audiences, backfills, retries, reprocessing. */
const editScopes = [
  "sources:write",
  "destinations:write",
  "deliveries:retry",
  "backfills:write",
  "plans:write",
  "audiences:write",
  "hooks:write",
] as const;

/** Everything but people: deletions, every token, the audit log. */
const adminScopes = ["deletions:write", "tokens:read", "tokens:write", "audit:read"] as const;

/** People and their roles. */
const ownerScopes = ["users:read", "users:write"] as const;

export const allScopes = [...readScopes, ...editScopes, ...adminScopes, ...ownerScopes] as const;
export type Scope = (typeof allScopes)[number];

const scopesByRole: Readonly<Record<RoleName, ReadonlySet<Scope>>> = {
  viewer: new Set(readScopes),
  editor: new Set([...readScopes, ...editScopes]),
  admin: new Set([...readScopes, ...editScopes, ...adminScopes]),
  owner: new Set(allScopes),
};

export function scopesOf(role: RoleName): ReadonlySet<Scope> {
  return scopesByRole[role];
}

export function isScope(value: string): value is Scope {
  return (allScopes as readonly string[]).includes(value);
}

export function isRole(value: string): value is RoleName {
  return (roles as readonly string[]).includes(value);
}

/** The rank of a role: a higher one holds every scope of a lower one. */
export function roleRank(role: RoleName): number {
  return roles.indexOf(role);
}

/** The lowest role that holds every one of `scopes`, or undefined when none does (never: owner holds all). */
export function roleCovering(scopes: Iterable<Scope>): RoleName {
  const wanted = [...scopes];
  return roles.find((role) => wanted.every((scope) => scopesByRole[role].has(scope))) ?? "owner";
}
