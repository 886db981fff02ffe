import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ApiToken, TokenService } from "../../../gen/waypost/v1/access_pb.js";
import type { Principal } from "../../access/principal.js";
import { isScope, type RoleName, type Scope, scopesOf } from "../../access/roles.js";
import { hashTokenSecret, newTokenSecret, tokenDisplayPrefix } from "../../access/token-secret.js";
import type { Clock } from "../../clock.js";
import { insertApiToken, revokeApiToken, selectApiToken, selectApiTokens } from "../../db/queries/access/api-tokens.js";
import type { Queryable } from "../../db/pool.js";
import { principalKey } from "../auth.js";
import { invalidArgument, notFound, requireUuid } from "../errors.js";
import { decodePageToken, encodePageToken, listPage, pageSize } from "../paging.js";
import { roleFromProto, tokenToProto } from "./access-proto.js";

export interface TokenServiceOptions {
  pool: Queryable;
  clock: Clock;
}

export function principalOf(ctx: HandlerContext): Principal {
  const principal = ctx.values.get(principalKey);
  if (!principal) throw new ConnectError("no admin principal", Code.Unauthenticated);
  return principal;
}

/** What a new token may do: a role or scopes, never beyond its creator's. */
function grantOf(token: ApiToken, creator: Principal): { role: RoleName | null; scopes: Scope[] } {
  const role = roleFromProto(token.role, "token.role");
  if (role && token.scopes.length > 0) throw invalidArgument("token.scopes", "give a role or scopes, not both");
  if (!role && token.scopes.length === 0) throw invalidArgument("token.role", "a token needs a role or scopes");
  const unknown = token.scopes.find((scope) => !isScope(scope));
  if (unknown !== undefined) throw invalidArgument("token.scopes", `${JSON.stringify(unknown).slice(0, 80)} is not a scope`);
  const scopes = role ? [...scopesOf(role)] : [...new Set(token.scopes as Scope[])];
  const above = scopes.find((scope) => !creator.scopes.has(scope));
  if (above) throw new ConnectError(`a token cannot hold ${above}: ${creator.name} does not`, Code.PermissionDenied);
  return { role: role ?? null, scopes: role ? [] : scopes };
}

/** A new token's source limit: within its creator's. */
function sourceLimitOf(token: ApiToken, creator: Principal): string[] | null {
  for (const [i, id] of token.sourceIds.entries()) requireUuid(`token.sourceIds[${i}]`, id);
  if (creator.sourceIds === undefined) return token.sourceIds.length > 0 ? [...token.sourceIds] : null;
  if (token.sourceIds.length === 0) return [...creator.sourceIds];
  const outside = token.sourceIds.find((id) => !creator.sourceIds?.includes(id));
  if (outside) throw new ConnectError(`a token cannot reach source ${outside}: ${creator.name} does not`, Code.PermissionDenied);
  return [...token.sourceIds];
}

/**
 * API tokens. Anyone may make tokens for themselves within their own role
 * and sources; tokens of service accounts, and other people's tokens, need
 * tokens:write (tokens:read to list them).
 */
export function createTokenService(options: TokenServiceOptions): ServiceImpl<typeof TokenService> {
  return {
    async createToken(req, ctx) {
      const creator = principalOf(ctx);
      const token = req.token;
      if (!token) throw invalidArgument("token", "is required");
      const name = token.name.trim();
      if (name.length === 0 || name.length > 200) throw invalidArgument("token.name", "must be 1 to 200 characters");
      const serviceAccount = token.serviceAccount || creator.userId === undefined;
      if (serviceAccount && !creator.scopes.has("tokens:write")) {
        throw new ConnectError(
          creator.userId === undefined
            ? `${creator.name} is no person, so its tokens are service accounts', which need the scope tokens:write`
            : "service-account tokens need the scope tokens:write",
          Code.PermissionDenied,
        );
      }
      const grant = grantOf(token, creator);
      const now = options.clock.now();
      const expiresAt = token.expireTime ? timestampDate(token.expireTime) : null;
      if (expiresAt && expiresAt <= now) throw invalidArgument("token.expireTime", "is in the past");
      const secret = newTokenSecret();
      const row = await insertApiToken(options.pool, {
        name,
        secretHash: hashTokenSecret(secret),
        prefix: tokenDisplayPrefix(secret),
        role: grant.role,
        scopes: grant.scopes,
        sourceIds: sourceLimitOf(token, creator),
        userId: serviceAccount ? null : (creator.userId ?? null),
        createdBy: creator.name,
        expiresAt,
        now,
      });
      return { token: tokenToProto(row), secret };
    },

    async listTokens(req, ctx) {
      const principal = principalOf(ctx);
      const everyone = principal.scopes.has("tokens:read");
      if (!everyone && principal.userId === undefined) return { tokens: [], nextPageToken: "" };
      const cursor = decodePageToken(req.pageToken);
      const [at, id] = cursor?.split("|") ?? [];
      const after = at && id ? { createdAt: new Date(at), id } : undefined;
      if (after && Number.isNaN(after.createdAt.getTime())) throw invalidArgument("pageToken", "is not a token this server issued");
      const page = await listPage(
        pageSize(req.pageSize),
        (limit) =>
          selectApiTokens(options.pool, {
            userId: everyone ? undefined : principal.userId,
            includeInactive: req.includeInactive,
            now: options.clock.now(),
            after,
            limit,
          }),
        (last) => encodePageToken(`${last.created_at.toISOString()}|${last.id}`),
      );
      return { tokens: page.rows.map(tokenToProto), nextPageToken: page.nextPageToken };
    },

    async revokeToken(req, ctx) {
      const principal = principalOf(ctx);
      const id = requireUuid("id", req.id);
      const found = await selectApiToken(options.pool, id);
      const own = found && found.user_id !== null && found.user_id === principal.userId;
      if (!found || (!own && !principal.scopes.has("tokens:read"))) throw notFound("token", id);
      if (!own && !principal.scopes.has("tokens:write")) {
        throw new ConnectError(`revoking another's token needs the scope tokens:write`, Code.PermissionDenied);
      }
      const row = await revokeApiToken(options.pool, id, options.clock.now());
      if (!row) throw notFound("token", id);
      return { token: tokenToProto(row) };
    },
  };
}
