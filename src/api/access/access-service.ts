import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { AccessService } from "../../../gen/waypost/v1/access_pb.js";
import type { Clock } from "../../clock.js";
import { revokeUserSessions } from "../../db/queries/access/user-sessions.js";
import { countEnabledOwners, selectUser, selectUsers, type UserChange, type UserRow, updateUser } from "../../db/queries/access/users.js";
import type { Queryable } from "../../db/pool.js";
import { invalidArgument, notFound, requireUuid } from "../errors.js";
import { decodePageToken, encodePageToken, listPage, pageSize } from "../paging.js";
import { roleFromProto, roleToProto, userToProto } from "./access-proto.js";
import { principalOf } from "./token-service.js";

export interface AccessServiceOptions {
  pool: Queryable;
  clock: Clock;
}

const maskFields = ["role", "source_ids", "disabled"] as const;

function maskOf(text: string): Set<string> {
  const fields = text
    .split(",")
    .map((field) => field.trim().replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`))
    .filter(Boolean);
  const unknown = fields.find((field) => !(maskFields as readonly string[]).includes(field));
  if (unknown) throw invalidArgument("updateMask", `${unknown} cannot be updated (role, source_ids, disabled)`);
  return new Set(fields.length > 0 ? fields : maskFields);
}

/** Refuses to demote or disable the last enabled owner: someone must be able to hand out roles without the admin token. */
async function keepAnOwner(pool: Queryable, existing: UserRow, change: UserChange): Promise<void> {
  const losesOwner =
    existing.role === "owner" && !existing.disabled && ((change.role !== undefined && change.role !== "owner") || change.disabled === true);
  if (!losesOwner) return;
  if ((await countEnabledOwners(pool)) <= 1) {
    throw new ConnectError(`${existing.email} is the last owner: make someone else owner first`, Code.FailedPrecondition);
  }
}

/** Who a caller is, and the people who have signed in (owner only). */
export function createAccessService(options: AccessServiceOptions): ServiceImpl<typeof AccessService> {
  return {
    async getCurrentPrincipal(_, ctx) {
      const principal = principalOf(ctx);
      return {
        principal: {
          kind: principal.kind,
          id: principal.id,
          name: principal.name,
          role: roleToProto(principal.role),
          scopes: [...principal.scopes].sort(),
          sourceIds: principal.sourceIds ? [...principal.sourceIds] : [],
          csrfToken: principal.csrfToken ?? "",
        },
      };
    },

    async listUsers(req) {
      const cursor = decodePageToken(req.pageToken);
      const split = cursor?.lastIndexOf("|") ?? -1;
      const after = cursor && split > 0 ? { email: cursor.slice(0, split), id: cursor.slice(split + 1) } : undefined;
      const page = await listPage(
        pageSize(req.pageSize),
        (limit) => selectUsers(options.pool, after, limit),
        (last) => encodePageToken(`${last.email}|${last.id}`),
      );
      return { users: page.rows.map(userToProto), nextPageToken: page.nextPageToken };
    },

    async updateUser(req) {
      const user = req.user;
      if (!user) throw invalidArgument("user", "is required");
      const id = requireUuid("user.id", user.id);
      const existing = await selectUser(options.pool, id);
      if (!existing) throw notFound("user", id);
      const mask = maskOf(req.updateMask);
      const change: UserChange = {};
      if (mask.has("role")) {
        const role = roleFromProto(user.role, "user.role");
        if (!role) throw invalidArgument("user.role", "is required");
        if (existing.role_from_claim && role !== existing.role) {
          throw new ConnectError(
            `${existing.email}'s role comes from the identity provider's groups (WAYPOST_OIDC_ROLE_MAPPING): change it there`,
            Code.FailedPrecondition,
          );
        }
        change.role = role;
      }
      if (mask.has("source_ids")) {
        for (const [i, sourceId] of user.sourceIds.entries()) requireUuid(`user.sourceIds[${i}]`, sourceId);
        change.sourceIds = user.sourceIds.length > 0 ? [...user.sourceIds] : null;
      }
      if (mask.has("disabled")) change.disabled = user.disabled;
      await keepAnOwner(options.pool, existing, change);
      const row = await updateUser(options.pool, id, change);
      if (!row) throw notFound("user", id);
      // A disabled user's sessions end now, not at their idle timeout.
      if (row.disabled) await revokeUserSessions(options.pool, id, options.clock.now());
      return { user: userToProto(row) };
    },

    async revokeSessions(req) {
      const id = requireUuid("userId", req.userId);
      if (!(await selectUser(options.pool, id))) throw notFound("user", id);
      return { revoked: await revokeUserSessions(options.pool, id, options.clock.now()) };
    },
  };
}
