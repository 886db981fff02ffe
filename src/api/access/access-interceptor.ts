import { type DescMessage, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { auditDiff, redacted, secretsSet } from "../../access/audit-diff.js";
import type { AuditLog } from "../../access/audit-log.js";
import { type Principal, reachesSource, reachesSources } from "../../access/principal.js";
import { sourceOfAudience, sourcesOfDestination } from "../../db/queries/access/source-reach.js";
import type { Queryable } from "../../db/pool.js";
import { principalKey, requestOriginKey } from "../auth.js";
import { type Reach, ruleOf, type RpcRule, type TargetKind } from "./rpc-scopes.js";

type Json = Record<string, unknown>;

/** Reads a thing as the API shows it (so without secrets), for an audit diff; undefined when it does not exist. */
export type TargetReader = (id: string) => Promise<Json | undefined>;

export interface AccessInterceptorOptions {
  pool: Queryable;
  audit: AuditLog;
  readers: Partial<Record<TargetKind, TargetReader>>;
}

const asJson = (schema: DescMessage, message: unknown): Json => {
  try {
    return toJson(schema, message as never, { alwaysEmitImplicit: false }) as Json;
  } catch {
    return {};
  }
};

/**
 * After the gate (which checked the credential and the RPC's scope): the
 * source limit of a limited principal, which needs the request's body, and
 * the audit row of every change that succeeded.
 */
export function createAccessInterceptor(options: AccessInterceptorOptions): Interceptor {
  async function sourcesReached(reach: Reach, request: Json): Promise<string[]> {
    if ("sources" in reach) return reach.sources(request).filter(Boolean);
    if ("destination" in reach) return sourcesOfDestination(options.pool, reach.destination(request));
    if ("audience" in reach) return sourceOfAudience(options.pool, reach.audience(request));
    return [];
  }

  async function checkReach(principal: Principal, rule: RpcRule, request: Json, rpc: string): Promise<void> {
    if (principal.sourceIds === undefined || (rule.reach && "none" in rule.reach)) return;
    if (!rule.reach) throw new ConnectError(`${rpc} needs every source; ${principal.name} is limited to some`, Code.PermissionDenied);
    const sources = await sourcesReached(rule.reach, request);
    if (!reachesSources(principal, sources)) {
      throw new ConnectError(`${principal.name} is limited to other sources than this request touches`, Code.PermissionDenied);
    }
  }

  return (next) => async (req) => {
    const principal = req.contextValues.get(principalKey);
    const rule = principal && ruleOf(req.service.typeName, req.method.name);
    if (!principal || !rule) return next(req);
    const rpc = `${req.service.name}/${req.method.name}`;
    const request = req.stream ? {} : asJson(req.method.input, req.message);
    if (!req.stream) await checkReach(principal, rule, request, rpc);
    else if (principal.sourceIds !== undefined)
      throw new ConnectError(`${rpc} needs every source; ${principal.name} is limited to some`, Code.PermissionDenied);
    const audit = rule.audit;
    const reader = audit?.diff ? options.readers[audit.target] : undefined;
    const idBefore = audit ? audit.targetId(request, {}) : "";
    const before = reader && idBefore ? await reader(idBefore) : undefined;
    const res = await next(req);
    if (!res.stream) limitListing(principal, rpc, res.message as unknown as Json);
    if (!audit) return res;
    const response = res.stream ? {} : asJson(req.method.output, res.message);
    const targetId = audit.targetId(request, response);
    const after = reader && targetId && !audit.action.endsWith(".delete") ? await reader(targetId) : undefined;
    const origin = req.contextValues.get(requestOriginKey);
    await options.audit.record({
      actor: principal,
      action: audit.action,
      targetKind: audit.target,
      targetId,
      diff: reader ? { ...auditDiff(before, after), ...secretsSet(request) } : requestSummary(request),
      requestId: origin.requestId,
      clientAddress: origin.clientAddress,
      userAgent: origin.userAgent,
    });
    return res;
  };
}

/** A change without a before and after (a retry, a backfill, a rotation): what was asked, bounded and without secrets. */
function requestSummary(request: Json): Record<string, unknown> | null {
  return Object.keys(request).length === 0 ? null : { request: redacted(request) };
}

/** A limited principal's list of sources or destinations: only those in reach. */
function limitListing(principal: Principal, rpc: string, message: Json): void {
  if (principal.sourceIds === undefined) return;
  if (rpc === "SourceService/ListSources" && Array.isArray(message.sources)) {
    message.sources = message.sources.filter((source: { id: string }) => reachesSource(principal, source.id));
  }
  if (rpc === "DestinationService/ListDestinations" && Array.isArray(message.destinations)) {
    message.destinations = message.destinations.filter((destination: { sourceIds: string[] }) =>
      reachesSources(principal, destination.sourceIds),
    );
  }
}
