import { type Principal, Role } from "../../../gen/waypost/v1/access_pb.js";

// What the console offers a principal: the scope each admin RPC behind a
// page or a button needs, by the scope names of the server's own table
// (src/api/access/rpc-scopes.ts; test/console/access-permissions.test.ts holds
// this one to it). The server refuses whatever a scope does not allow; the
// console only hides what would be refused, and never reasons by role.

export type Scope =
  | `${"sources" | "destinations" | "deliveries" | "plans" | "audiences" | "deletions" | "hooks" | "integrations" | "profiles"}:read`
  | `${"sources" | "destinations" | "backfills" | "plans" | "audiences" | "hooks" | "deletions"}:write`
  | "deliveries:retry"
  | `${"tokens" | "users"}:${"read" | "write"}`
  | "audit:read";

/** "authenticated": any credential (the RPC itself narrows further, as tokens do). */
export const rpcScopes = {
  "SourceService/ListSources": "sources:read",
  "SourceService/CreateSource": "sources:write",
  "SourceService/UpdateSource": "sources:write",
  "SourceService/RotateWriteKey": "sources:write",
  "SourceService/RotateHookToken": "sources:write",
  "SourceService/DeleteSource": "sources:write",
  "HookService/TestSourceTransform": "sources:write",
  "HookService/ReprocessHookRequests": "hooks:write",

  "DestinationService/ListDestinations": "destinations:read",
  "DestinationService/CreateDestination": "destinations:write",
  "DestinationService/UpdateDestination": "destinations:write",
  "DestinationService/DeleteDestination": "destinations:write",
  "DestinationService/RotateSigningSecret": "destinations:write",
  "DestinationService/TestDestination": "destinations:write",
  "DestinationService/BackfillDestination": "backfills:write",
  "DestinationService/CancelBackfill": "backfills:write",

  "DeliveryService/GetDestinationStats": "deliveries:read",
  "DeliveryService/ListDeliveries": "deliveries:read",
  "DeliveryService/RetryDelivery": "deliveries:retry",
  "DeliveryService/RetryDeliveries": "deliveries:retry",
  "DeliveryService/ExplainMessage": "deliveries:read",

  "AudienceService/ListAudiences": "audiences:read",
  "DeletionService/ListDeletionRequests": "deletions:read",
  "DeletionService/CreateDeletionRequest": "deletions:write",
  "TrackingPlanService/GetTrackingPlan": "plans:read",

  "ProfileService/GetProfile": "profiles:read",
  "ProfileService/ListProfileEvents": "profiles:read",
  "ProfileService/SearchProfiles": "profiles:read",
  "ProfileService/ListProfileMerges": "profiles:read",

  "TokenService/ListTokens": "authenticated",
  "TokenService/CreateToken": "authenticated",
  "TokenService/RevokeToken": "authenticated",
  "AuditService/ListAuditEvents": "audit:read",
  "AccessService/ListUsers": "users:read",
  "AccessService/UpdateUser": "users:write",
  "AccessService/RevokeSessions": "users:write",
} as const satisfies Record<string, Scope | "authenticated">;

export type Rpc = keyof typeof rpcScopes;

/** Whether `principal` holds `scope`. */
export function holds(principal: Principal, scope: Scope): boolean {
  return principal.scopes.includes(scope);
}

/** Whether `principal` may call `rpc`, so the console offers what calls it. */
export function may(principal: Principal, rpc: Rpc): boolean {
  const scope: Scope | "authenticated" = rpcScopes[rpc];
  return scope === "authenticated" || holds(principal, scope);
}

/** The roles, lowest first, as people read them. */
export const roleNames: ReadonlyArray<[Role, string]> = [
  [Role.VIEWER, "viewer"],
  [Role.EDITOR, "editor"],
  [Role.ADMIN, "admin"],
  [Role.OWNER, "owner"],
];

export const roleName = (role: Role): string => roleNames.find(([r]) => r === role)?.[1] ?? "none";

/** The roles a principal may give a token: its own and those below (a role holds every scope of the ones below it). */
export function rolesUpTo(role: Role): ReadonlyArray<[Role, string]> {
  return roleNames.filter(([r]) => r <= role);
}

// Tokens: anyone may make their own, within their role and sources; a
// service account's tokens (and those of a credential that is no person)
// need tokens:write, and other people's tokens tokens:read and tokens:write.

/** The admin token is no person: every token it makes is a service account's. */
export const everyTokenIsServiceAccount = (principal: Principal) => principal.kind === "admin-token";

/**
 * Whether the console offers Create token: with tokens:write, or to a
 * person signed in. An API token cannot tell whether a person is behind
 * it, so without tokens:write it is not offered (the server would refuse
 * a service account's).
 */
export const mayCreateTokens = (principal: Principal) => holds(principal, "tokens:write") || principal.kind === "user";

/** Whether Revoke is offered for a listed token: any with tokens:write; without tokens:read the list holds only one's own. */
export function mayRevokeToken(principal: Principal, token: { serviceAccount: boolean }): boolean {
  return holds(principal, "tokens:write") || (!holds(principal, "tokens:read") && !token.serviceAccount);
}
