import { create } from "@bufbuild/protobuf";
import type { Command } from "commander";
import {
  AccessService,
  ListUsersResponseSchema,
  RevokeSessionsResponseSchema,
  Role,
  UpdateUserResponseSchema,
  type User,
} from "../../../gen/waypost/v1/access_pb.js";
import type { Wire } from "../context.js";
import { UsageError } from "../errors.js";
import { collect, fields, table, time } from "../format.js";
import { parseRole, roleNames, sourcesText } from "./access-text.js";
import { listPages } from "./list-pages.js";

function roleText(user: User): string {
  return roleNames[user.role] + (user.roleFromClaim ? " (from claim)" : "");
}

function describe(user: User): string {
  return fields([
    ["id", user.id],
    ["email", user.email],
    ["name", user.name || "-"],
    ["role", roleText(user)],
    ["sources", sourcesText(user.sourceIds)],
    ["disabled", user.disabled ? "yes" : "no"],
    ["created", time(user.createTime)],
    ["last sign-in", time(user.lastSignInTime)],
  ]);
}

interface UpdateFlags {
  role?: string;
  source?: string[];
  allSources?: boolean;
  disable?: boolean;
  enable?: boolean;
}

/** `users list|update|revoke-sessions`: the people who signed in (AccessService; owner). */
export function registerUsers(program: Command, wire: Wire): void {
  const users = program
    .command("users")
    .description(
      "the people who have signed in to the console: roles, source limits, disabling, signing out (needs users:read/users:write)",
    );

  users
    .command("list")
    .description("every user, by email")
    .action(
      wire(async (ctx) => {
        const client = ctx.admin(AccessService);
        const listed = await listPages(
          (pageToken, pageSize) => client.listUsers({ pageSize, pageToken }, { signal: ctx.signal }),
          (page) => page.users,
        );
        const all = create(ListUsersResponseSchema, { users: listed.items });
        ctx.print(ListUsersResponseSchema, all, () =>
          table(
            ["ID", "EMAIL", "NAME", "ROLE", "SOURCES", "DISABLED", "CREATED", "LAST SIGN-IN"],
            all.users.map((u) => [
              u.id,
              u.email,
              u.name || "-",
              roleText(u),
              sourcesText(u.sourceIds),
              u.disabled ? "yes" : "no",
              time(u.createTime),
              time(u.lastSignInTime),
            ]),
          ),
        );
      }),
    );

  users
    .command("update")
    .description("change a user's role, source limit or disabled flag; only what the flags name changes")
    .argument("<id>", "user id (from users list)")
    .option("--role <role>", "viewer, editor, admin or owner")
    .option("--source <id>", "limit them to this source (repeat for several); replaces their limit", collect)
    .option("--all-sources", "remove their source limit")
    .option("--disable", "disable them: their sessions end and their tokens stop working now")
    .option("--enable", "enable them again")
    .action(
      wire(async (ctx, id: string, flags: UpdateFlags) => {
        if (flags.source !== undefined && flags.allSources) throw new UsageError("give --source or --all-sources, not both");
        if (flags.disable && flags.enable) throw new UsageError("give --disable or --enable, not both");
        const mask: string[] = [];
        if (flags.role !== undefined) mask.push("role");
        if (flags.source !== undefined || flags.allSources) mask.push("source_ids");
        if (flags.disable || flags.enable) mask.push("disabled");
        // An empty mask means every field to the server: never send one.
        if (mask.length === 0) throw new UsageError("nothing to change: give --role, --source, --all-sources, --disable or --enable");
        const response = await ctx.admin(AccessService).updateUser({
          user: {
            id,
            role: flags.role === undefined ? Role.UNSPECIFIED : parseRole(flags.role),
            sourceIds: flags.source ?? [],
            disabled: flags.disable === true,
          },
          updateMask: mask.join(","),
        });
        ctx.print(UpdateUserResponseSchema, response, () => describe(response.user!));
      }),
    );

  users
    .command("revoke-sessions")
    .description("sign a user out everywhere (their API tokens keep working: revoke those with tokens revoke)")
    .argument("<id>", "user id")
    .action(
      wire(async (ctx, id: string) => {
        const response = await ctx.admin(AccessService).revokeSessions({ userId: id });
        ctx.print(
          RevokeSessionsResponseSchema,
          response,
          () => `revoked ${response.revoked} session${response.revoked === 1 ? "" : "s"} of user ${id}`,
        );
      }),
    );
}
