import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Command } from "commander";
import {
  type ApiToken,
  CreateTokenResponseSchema,
  ListTokensResponseSchema,
  RevokeTokenResponseSchema,
  Role,
  TokenService,
} from "../../../gen/waypost/v1/access_pb.js";
import type { Wire } from "../context.js";
import { UsageError } from "../errors.js";
import { collect, fields, parseFutureTime, table, time } from "../format.js";
import { parseRole, parseScopes, roleNames, sourcesText } from "./access-text.js";
import { listPages } from "./list-pages.js";

/** What a token may do: its role, or its scopes. */
function grantText(token: ApiToken): string {
  return token.role === Role.UNSPECIFIED ? token.scopes.join(",") || "-" : roleNames[token.role];
}

/** When it was last used, and from where. */
function lastUseText(token: ApiToken): string {
  if (!token.lastUseTime) return "never";
  return token.lastUseAddress ? `${time(token.lastUseTime)} from ${token.lastUseAddress}` : time(token.lastUseTime);
}

function describe(token: ApiToken): Array<[string, string]> {
  return [
    ["id", token.id],
    ["name", token.name],
    ["prefix", token.prefix],
    [token.role === Role.UNSPECIFIED ? "scopes" : "role", grantText(token)],
    ["sources", sourcesText(token.sourceIds)],
    ["owner", token.serviceAccount ? "service account" : `user ${token.userId}`],
    ["expires", token.expireTime ? time(token.expireTime) : "never"],
    ["last used", lastUseText(token)],
    ["revoked", time(token.revokeTime)],
    ["created", `${time(token.createTime)} by ${token.createdBy}`],
  ];
}

interface CreateFlags {
  name: string;
  role?: string;
  scope?: string[];
  source?: string[];
  expires?: string;
  serviceAccount?: boolean;
}

/** `tokens create|list|revoke`: API tokens (TokenService). */
export function registerTokens(program: Command, wire: Wire): void {
  const tokens = program
    .command("tokens")
    .description("API tokens for scripts and service accounts: create (the secret is shown once), list, revoke");

  tokens
    .command("create")
    .description("create an API token with a role or scopes; its secret is shown this once")
    .requiredOption("--name <name>", "what the token is for (shown in lists and the audit log)")
    .option("--role <role>", "viewer, editor, admin or owner")
    .option("--scope <scope>", "a scope instead of a role, e.g. sources:read (repeat, or separate with commas)", collect)
    .option("--source <id>", "only this source (repeat for several; default: every source the creator reaches)", collect)
    .option("--expires <time>", "when it stops working: ISO 8601, or ahead from now: 30d, 12h (default: never)")
    .option("--service-account", "a service account's token, no person's (needs tokens:write; always so with the admin token)")
    .action(
      wire(async (ctx, flags: CreateFlags) => {
        if (flags.role !== undefined && flags.scope !== undefined) throw new UsageError("give --role or --scope, not both");
        if (flags.role === undefined && flags.scope === undefined) throw new UsageError("a token needs --role ROLE or --scope SCOPE");
        const role = flags.role === undefined ? Role.UNSPECIFIED : parseRole(flags.role);
        const scopes = flags.scope === undefined ? [] : parseScopes(flags.scope);
        if (flags.scope !== undefined && scopes.length === 0) throw new UsageError("--scope: no scope given");
        const expires = flags.expires === undefined ? undefined : parseFutureTime(flags.expires, "--expires");
        const response = await ctx.admin(TokenService).createToken({
          token: {
            name: flags.name,
            role,
            scopes,
            sourceIds: flags.source ?? [],
            serviceAccount: flags.serviceAccount === true,
            ...(expires ? { expireTime: timestampFromDate(expires) } : {}),
          },
        });
        const token = response.token!;
        ctx.print(
          CreateTokenResponseSchema,
          response,
          () =>
            `${fields([...describe(token).filter(([key]) => !["last used", "revoked"].includes(key)), ["secret", response.secret]])}` +
            "The secret is shown only this once and cannot be read back: keep it now (lists show its prefix).",
        );
      }),
    );

  tokens
    .command("list")
    .description("the tokens in use, newest first: everyone's with tokens:read, else your own")
    .option("--all", "also the revoked and expired ones")
    .action(
      wire(async (ctx, flags: { all?: boolean }) => {
        const client = ctx.admin(TokenService);
        const listed = await listPages(
          (pageToken, pageSize) => client.listTokens({ includeInactive: flags.all === true, pageSize, pageToken }, { signal: ctx.signal }),
          (page) => page.tokens,
        );
        const all = create(ListTokensResponseSchema, { tokens: listed.items });
        ctx.print(ListTokensResponseSchema, all, () =>
          table(
            ["ID", "NAME", "PREFIX", "ROLE/SCOPES", "SOURCES", "EXPIRES", "LAST USED", "REVOKED"],
            all.tokens.map((t) => [
              t.id,
              t.name,
              t.prefix,
              grantText(t),
              sourcesText(t.sourceIds),
              t.expireTime ? time(t.expireTime) : "never",
              lastUseText(t),
              time(t.revokeTime),
            ]),
          ),
        );
      }),
    );

  tokens
    .command("revoke")
    .description("revoke a token: it stops working at its next request")
    .argument("<id>", "token id (from tokens list)")
    .action(
      wire(async (ctx, id: string) => {
        const response = await ctx.admin(TokenService).revokeToken({ id });
        const token = response.token!;
        ctx.print(RevokeTokenResponseSchema, response, () => `revoked token ${token.id} (${token.name}) at ${time(token.revokeTime)}`);
      }),
    );
}
