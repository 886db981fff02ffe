import type { IdentifierRule } from "../identity-config.js";
import type { Identifier } from "./merge-plan.js";

// A stored call's identifiers, read from the body Waypost stores (the
// webhook body of docs/webhooks.md): userId, anonymousId, and the types the
// operator names by path. An alias's ids are under "User ID" and
// "Previous ID"; its previous id is either kind, so it is given as a
// candidate the resolver matches against the graph.

/** The most characters an identifier keeps: longer values are no identifier (a body, not an id). */
export const maxIdentifierLength = 256;

export interface CallFacts {
  type: string;
  identifiers: Identifier[];
  /** An alias's previous id (a userId or an anonymousId). */
  previousId: string | undefined;
  /** An identify's traits, merged into the profile. */
  traits: Record<string, unknown> | undefined;
  /** A track's event name, or "(page)", "(identify)", ...: what the profile counts. */
  counted: string;
}

function at(body: Record<string, unknown>, path: string): unknown {
  let value: unknown = body;
  for (const key of path.split(".")) {
    if (!value || typeof value !== "object" || Array.isArray(value)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** A usable identifier value: a string or a finite number, not blocked, not too long. */
function identifierValue(raw: unknown, rule: IdentifierRule): string | undefined {
  const value = typeof raw === "number" && Number.isFinite(raw) ? String(raw) : typeof raw === "string" ? raw.trim() : undefined;
  if (value === undefined || value.length > maxIdentifierLength) return undefined;
  return rule.blocked.has(value.toLowerCase()) ? undefined : value;
}

export function factsOfCall(payload: string, rules: readonly IdentifierRule[]): CallFacts | undefined {
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(payload) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const type = typeof body.type === "string" ? body.type : "";
  if (type === "delete") return undefined;
  if (type === "alias") body = { ...body, userId: body["User ID"] };
  const identifiers: Identifier[] = [];
  for (const rule of rules) {
    const value = identifierValue(at(body, rule.path), rule);
    if (value !== undefined) identifiers.push({ type: rule.type, value });
  }
  const userRule = rules.find((rule) => rule.type === "user_id");
  const previousId = type === "alias" && userRule ? identifierValue(body["Previous ID"], userRule) : undefined;
  const traits =
    type === "identify" && body.traits && typeof body.traits === "object" && !Array.isArray(body.traits)
      ? (body.traits as Record<string, unknown>)
      : undefined;
  const counted = type === "track" && typeof body.event === "string" ? body.event.slice(0, 200) : `(${type})`;
  return { type, identifiers, previousId, traits, counted };
}
