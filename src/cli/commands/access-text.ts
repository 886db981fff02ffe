import { Role } from "../../../gen/waypost/v1/access_pb.js";
import { allScopes, roles } from "../../access/roles.js";
import { enumWords } from "../../enum-words.js";
import { UsageError } from "../errors.js";

// Roles, scopes and source limits of tokens, users and principals, as the
// commands take them on the line and show them.

/** A Role in a word: viewer, editor, admin, owner ("-" for none). */
export const roleNames = enumWords(Role, { [Role.UNSPECIFIED]: "-" });

/** --role: viewer, editor, admin or owner. */
export function parseRole(text: string, flag = "--role"): Role {
  const name = text.trim().toLowerCase();
  const role = (Object.entries(roleNames) as Array<[string, string]>).find(([value, word]) => word === name && Number(value) !== 0);
  if (!role) throw new UsageError(`${flag}: "${text}" is not a role (one of ${roles.join(", ")})`);
  return Number(role[0]) as Role;
}

/** --scope (repeatable, or several separated by commas): each a scope the server knows. */
export function parseScopes(values: readonly string[], flag = "--scope"): string[] {
  const scopes = values
    .flatMap((value) => value.split(","))
    .map((scope) => scope.trim())
    .filter((scope) => scope !== "");
  const unknown = scopes.find((scope) => !(allScopes as readonly string[]).includes(scope));
  if (unknown !== undefined) throw new UsageError(`${flag}: "${unknown}" is not a scope (one of ${allScopes.join(", ")})`);
  return [...new Set(scopes)];
}

/** A source limit: "all" for none, else the sources' ids. */
export function sourcesText(sourceIds: readonly string[]): string {
  return sourceIds.length === 0 ? "all" : sourceIds.join(", ");
}
