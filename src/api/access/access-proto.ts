import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  type ApiToken,
  ApiTokenSchema,
  type AuditEvent,
  AuditEventSchema,
  Role,
  type User,
  UserSchema,
} from "../../../gen/waypost/v1/access_pb.js";
import type { RoleName } from "../../access/roles.js";
import type { ApiTokenRow } from "../../db/queries/access/api-tokens.js";
import type { AuditEventRow } from "../../db/queries/access/audit-events.js";
import type { UserRow } from "../../db/queries/access/users.js";
import { invalidArgument } from "../errors.js";

// Team access's rows as their proto messages, and the Role enum both ways.

const roleEnum: Readonly<Record<RoleName, Role>> = {
  viewer: Role.VIEWER,
  editor: Role.EDITOR,
  admin: Role.ADMIN,
  owner: Role.OWNER,
};

export function roleToProto(role: string | null | undefined): Role {
  return role && role in roleEnum ? roleEnum[role as RoleName] : Role.UNSPECIFIED;
}

/** A Role from a request: undefined for unspecified, refused when out of range. */
export function roleFromProto(role: Role, field: string): RoleName | undefined {
  if (role === Role.UNSPECIFIED) return undefined;
  const name = (Object.keys(roleEnum) as RoleName[]).find((key) => roleEnum[key] === role);
  if (!name) throw invalidArgument(field, `is not a role (${role})`);
  return name;
}

export function userToProto(row: UserRow): User {
  return create(UserSchema, {
    id: row.id,
    email: row.email,
    name: row.name,
    role: roleToProto(row.role),
    roleFromClaim: row.role_from_claim,
    sourceIds: row.source_ids ?? [],
    disabled: row.disabled,
    createTime: timestampFromDate(row.created_at),
    ...(row.last_sign_in_at ? { lastSignInTime: timestampFromDate(row.last_sign_in_at) } : {}),
  });
}

export function tokenToProto(row: ApiTokenRow): ApiToken {
  return create(ApiTokenSchema, {
    id: row.id,
    name: row.name,
    role: roleToProto(row.role),
    scopes: row.role ? [] : row.scopes,
    sourceIds: row.source_ids ?? [],
    serviceAccount: row.user_id === null,
    userId: row.user_id ?? "",
    prefix: row.prefix,
    createTime: timestampFromDate(row.created_at),
    ...(row.expires_at ? { expireTime: timestampFromDate(row.expires_at) } : {}),
    ...(row.last_used_at ? { lastUseTime: timestampFromDate(row.last_used_at) } : {}),
    lastUseAddress: row.last_used_address ?? "",
    ...(row.revoked_at ? { revokeTime: timestampFromDate(row.revoked_at) } : {}),
    createdBy: row.created_by,
  });
}

export function auditEventToProto(row: AuditEventRow): AuditEvent {
  return create(AuditEventSchema, {
    id: row.id,
    time: timestampFromDate(row.at),
    actorKind: row.actor_kind,
    actorId: row.actor_id,
    actorName: row.actor_name,
    action: row.action,
    targetKind: row.target_kind,
    targetId: row.target_id,
    ...(row.diff ? { diff: row.diff as never } : {}),
    outcome: row.outcome,
    requestId: row.request_id,
    clientAddress: row.client_address,
    userAgent: row.user_agent,
  });
}
