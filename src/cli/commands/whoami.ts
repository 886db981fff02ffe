import type { Command } from "commander";
import { AccessService, GetCurrentPrincipalResponseSchema } from "../../../gen/waypost/v1/access_pb.js";
import type { Wire } from "../context.js";
import { fields } from "../format.js";
import { roleNames, sourcesText } from "./access-text.js";

/** `whoami`: the credential the CLI uses, and what it may do (AccessService.GetCurrentPrincipal). */
export function registerWhoami(program: Command, wire: Wire): void {
  program
    .command("whoami")
    .description("who the token is (the admin token, an API token, a user) and what it may do: its role, scopes and sources")
    .action(
      wire(async (ctx) => {
        const response = await ctx.admin(AccessService).getCurrentPrincipal({});
        const principal = response.principal!;
        ctx.print(GetCurrentPrincipalResponseSchema, response, () =>
          fields([
            ["kind", principal.kind],
            ["id", principal.id],
            ["name", principal.name],
            ["role", roleNames[principal.role]],
            ["scopes", principal.scopes.join(", ") || "-"],
            ["sources", sourcesText(principal.sourceIds)],
          ]),
        );
      }),
    );
}
