import type { Scope } from "../../access/roles.js";

// Every admin RPC's scope, in one table: the gate refuses a call whose
// principal lacks it (permission_denied naming the scope) before its body
// is read, and test/api/access/rpc-scopes.test.ts fails when an RPC of the
// generated services has no row here.
//
// `audit` marks a change: a row in the audit log after it succeeds, with
// its action and the kind of thing it changed (whose state before and after
// gives the diff). `reach` says which sources a request touches, for
// principals limited to some sources: absent, the RPC needs every source
// and such principals are refused.

type Json = Record<string, unknown>;

/** Which sources, destination or audience a request is about (JSON form of the request). */
export type Reach =
  | { none: true }
  | { sources: (request: Json) => string[] }
  | { destination: (request: Json) => string }
  | { audience: (request: Json) => string };

export type TargetKind = "source" | "destination" | "audience" | "plan" | "token" | "user" | "delivery" | "deletion" | "backfill" | "retry";

export interface AuditRule {
  /** For example "destination.update". */
  action: string;
  target: TargetKind;
  /** The target's id from the request (JSON), or from the response when the change creates it. */
  targetId: (request: Json, response: Json) => string;
  /** Read the target before and after, for a diff (updates and deletes of settings). */
  diff?: boolean;
}

export interface RpcRule {
  /** "authenticated": any admin principal (the RPC itself narrows further, e.g. tokens). */
  scope: Scope | "authenticated";
  audit?: AuditRule;
  reach?: Reach;
}

const str = (value: unknown) => (typeof value === "string" ? value : "");
const strs = (value: unknown) => (Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : []);
const field = (object: unknown, name: string) => (object && typeof object === "object" ? (object as Json)[name] : undefined);

const byId = (request: Json) => str(request.id);
const none: Reach = { none: true };
const sourceOf = (name: string): Reach => ({ sources: (request) => [str(request[name])] });
const destinationOf = (name: string): Reach => ({ destination: (request) => str(request[name]) });
const created = (resource: string) => (_: Json, response: Json) => str(field(response[resource], "id"));
const inRequest = (resource: string) => (request: Json) => str(field(request[resource], "id"));

export const rpcRules: Readonly<Record<string, RpcRule>> = {
  // Who am I: any principal.
  "AccessService/GetCurrentPrincipal": { scope: "authenticated", reach: none },
  "AccessService/ListUsers": { scope: "users:read" },
  "AccessService/UpdateUser": {
    scope: "users:write",
    audit: { action: "user.update", target: "user", targetId: (request) => str(field(request.user, "id")), diff: true },
  },
  "AccessService/RevokeSessions": {
    scope: "users:write",
    audit: { action: "user.revoke_sessions", target: "user", targetId: (request) => str(request.userId) },
  },
  // Tokens: anyone for their own, within their role and sources (the service checks); tokens:* for everyone's.
  "TokenService/CreateToken": {
    scope: "authenticated",
    reach: none,
    audit: { action: "token.create", target: "token", targetId: created("token"), diff: true },
  },
  "TokenService/ListTokens": { scope: "authenticated", reach: none },
  "TokenService/RevokeToken": {
    scope: "authenticated",
    reach: none,
    audit: { action: "token.revoke", target: "token", targetId: byId, diff: true },
  },
  "AuditService/ListAuditEvents": { scope: "audit:read" },

  "SourceService/CreateSource": {
    scope: "sources:write",
    audit: { action: "source.create", target: "source", targetId: created("source") },
  },
  "SourceService/GetSource": { scope: "sources:read", reach: sourceOf("id") },
  "SourceService/ListSources": { scope: "sources:read", reach: none },
  "SourceService/UpdateSource": {
    scope: "sources:write",
    reach: { sources: (request) => [str(field(request.source, "id"))] },
    audit: { action: "source.update", target: "source", targetId: inRequest("source"), diff: true },
  },
  "SourceService/RotateWriteKey": {
    scope: "sources:write",
    reach: sourceOf("id"),
    audit: { action: "source.rotate_write_key", target: "source", targetId: byId },
  },
  "SourceService/RotateHookToken": {
    scope: "sources:write",
    reach: sourceOf("id"),
    audit: { action: "source.rotate_hook_token", target: "source", targetId: byId },
  },
  "SourceService/DeleteSource": {
    scope: "sources:write",
    reach: sourceOf("id"),
    audit: { action: "source.delete", target: "source", targetId: byId, diff: true },
  },

  "DestinationService/CreateDestination": {
    scope: "destinations:write",
    reach: { sources: (request) => strs(field(request.destination, "sourceIds")) },
    audit: { action: "destination.create", target: "destination", targetId: created("destination"), diff: true },
  },
  "DestinationService/GetDestination": { scope: "destinations:read", reach: destinationOf("id") },
  "DestinationService/ListDestinations": { scope: "destinations:read", reach: none },
  "DestinationService/UpdateDestination": {
    scope: "destinations:write",
    reach: { destination: inRequest("destination") },
    audit: { action: "destination.update", target: "destination", targetId: inRequest("destination"), diff: true },
  },
  "DestinationService/DeleteDestination": {
    scope: "destinations:write",
    reach: destinationOf("id"),
    audit: { action: "destination.delete", target: "destination", targetId: byId, diff: true },
  },
  "DestinationService/RotateSigningSecret": {
    scope: "destinations:write",
    reach: destinationOf("id"),
    audit: { action: "destination.rotate_signing_secret", target: "destination", targetId: byId },
  },
  // Sends sample calls to the destination's receiver: a change of the world, if not of Waypost.
  "DestinationService/TestDestination": {
    scope: "destinations:write",
    reach: { sources: (request) => strs(field(request.destination, "sourceIds")) },
    audit: { action: "destination.test", target: "destination", targetId: inRequest("destination") },
  },
  "DestinationService/BackfillDestination": {
    scope: "backfills:write",
    reach: destinationOf("destinationId"),
    audit: { action: "destination.backfill", target: "destination", targetId: (request) => str(request.destinationId) },
  },
  "DestinationService/GetBackfill": { scope: "deliveries:read" },
  "DestinationService/ListBackfills": { scope: "deliveries:read", reach: destinationOf("destinationId") },
  "DestinationService/CancelBackfill": {
    scope: "backfills:write",
    audit: { action: "backfill.cancel", target: "backfill", targetId: byId },
  },

  "DeliveryService/ListDeliveries": { scope: "deliveries:read", reach: destinationOf("destinationId") },
  "DeliveryService/GetDelivery": { scope: "deliveries:read" },
  "DeliveryService/RetryDelivery": { scope: "deliveries:retry", audit: { action: "delivery.retry", target: "delivery", targetId: byId } },
  "DeliveryService/RetryDeliveries": {
    scope: "deliveries:retry",
    reach: destinationOf("destinationId"),
    audit: { action: "deliveries.retry", target: "destination", targetId: (request) => str(request.destinationId) },
  },
  "DeliveryService/GetRetryJob": { scope: "deliveries:read" },
  "DeliveryService/GetDestinationStats": { scope: "deliveries:read", reach: destinationOf("destinationId") },
  "DeliveryService/ExplainMessage": { scope: "deliveries:read", reach: sourceOf("sourceId") },
  "DeliveryService/ListFates": { scope: "deliveries:read", reach: destinationOf("destinationId") },

  "HookService/ListHookRequests": { scope: "hooks:read", reach: sourceOf("sourceId") },
  "HookService/ReprocessHookRequests": {
    scope: "hooks:write",
    reach: sourceOf("sourceId"),
    audit: { action: "hook_requests.reprocess", target: "source", targetId: (request) => str(request.sourceId) },
  },
  // Runs a draft transform over stored requests; changes nothing.
  "HookService/TestSourceTransform": { scope: "sources:write", reach: { sources: (request) => [str(field(request.source, "id"))] } },

  "IntegrationService/ListIntegrations": { scope: "integrations:read", reach: none },
  "IntegrationService/GetIntegration": { scope: "integrations:read", reach: none },

  "AudienceService/CreateAudience": {
    scope: "audiences:write",
    reach: { sources: (request) => [str(field(request.audience, "sourceId"))] },
    audit: { action: "audience.create", target: "audience", targetId: created("audience") },
  },
  "AudienceService/ListAudiences": { scope: "audiences:read", reach: sourceOf("sourceId") },
  "AudienceService/SyncAudience": {
    scope: "audiences:write",
    reach: { audience: (request) => str(request.audienceId) },
    audit: { action: "audience.sync", target: "audience", targetId: (request) => str(request.audienceId) },
  },
  "AudienceService/StreamSyncAudience": {
    scope: "audiences:write",
    audit: { action: "audience.sync", target: "audience", targetId: (request) => str(request.audienceId) },
  },
  "AudienceService/SyncComputedTrait": {
    scope: "audiences:write",
    reach: { audience: (request) => str(request.audienceId) },
    audit: { action: "audience.sync_computed_trait", target: "audience", targetId: (request) => str(request.audienceId) },
  },
  "AudienceService/StreamSyncComputedTrait": {
    scope: "audiences:write",
    audit: { action: "audience.sync_computed_trait", target: "audience", targetId: (request) => str(request.audienceId) },
  },
  "AudienceService/DeleteAudience": {
    scope: "audiences:write",
    reach: { audience: byId },
    audit: { action: "audience.delete", target: "audience", targetId: byId },
  },

  "DeletionService/CreateDeletionRequest": {
    scope: "deletions:write",
    reach: { sources: (request) => strs(request.sourceIds) },
    audit: { action: "deletion.create", target: "deletion", targetId: created("deletionRequest") },
  },
  "DeletionService/GetDeletionRequest": { scope: "deletions:read" },
  "DeletionService/ListDeletionRequests": { scope: "deletions:read" },

  // A person spans sources: no reach for a principal limited to some.
  "ProfileService/GetProfile": { scope: "profiles:read" },
  "ProfileService/ListProfileEvents": { scope: "profiles:read" },
  "ProfileService/SearchProfiles": { scope: "profiles:read" },
  "ProfileService/ListProfileMerges": { scope: "profiles:read" },

  "TrackingPlanService/SetTrackingPlan": {
    scope: "plans:write",
    reach: sourceOf("sourceId"),
    audit: { action: "plan.set", target: "plan", targetId: (request) => str(request.sourceId), diff: true },
  },
  "TrackingPlanService/GetTrackingPlan": { scope: "plans:read", reach: sourceOf("sourceId") },
  "TrackingPlanService/ListViolations": { scope: "plans:read", reach: sourceOf("sourceId") },
  "TrackingPlanService/InferTrackingPlan": { scope: "plans:read", reach: sourceOf("sourceId") },
};

/** The rule of `service/method` (the service's short name), or undefined for an RPC nobody declared: refused. */
export function ruleOf(serviceTypeName: string, method: string): RpcRule | undefined {
  return rpcRules[`${serviceTypeName.replace(/^waypost\.v1\./, "")}/${method}`];
}
