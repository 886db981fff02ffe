import { ConfigError } from "./config-values.js";

// Identity resolution settings (docs/profiles.md): whether calls are
// resolved into profiles, and the rules per identifier type.

export interface IdentifierRule {
  /** user_id, anonymous_id, or a type the operator names (email, device_id, ...). */
  type: string;
  /** Where a call carries it: "userId", "anonymousId", or a dotted path such as "traits.email" or "context.device.id". */
  path: string;
  /** Most identifiers of this type one profile may hold (0: no limit). */
  limit: number;
  /** Lower wins: when a merge would break a limit, the identifier of the lower priority is left out. */
  priority: number;
  /** Values never used as identifiers (compared lower-cased). */
  blocked: ReadonlySet<string>;
}

export interface IdentityConfig {
  enabled: boolean;
  /** Every type, highest priority first. */
  rules: readonly IdentifierRule[];
  /** Calls a resolver page reads at most. */
  pageSize: number;
}

/** Values no identifier takes, whatever its type: what careless code sends for "none". */
export const defaultBlocked = ["", "null", "undefined", "0", "-1", "none", "nil", "nan", "anonymous", "unknown", "[object object]"];

const typePattern = /^[a-z][a-z0-9_]{0,39}$/;
const pathPattern = /^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*){0,7}$/;

interface RuleInput {
  type?: unknown;
  path?: unknown;
  limit?: unknown;
  priority?: unknown;
  blocked?: unknown;
}

function ruleOf(input: RuleInput, index: number, fallback: Partial<IdentifierRule>): IdentifierRule {
  const where = `WAYPOST_IDENTITY_RULES[${index}]`;
  const type = input.type;
  if (typeof type !== "string" || !typePattern.test(type))
    throw new ConfigError(`${where}.type must be a lower-case name (a-z, 0-9, _), got ${JSON.stringify(type)}`);
  const path = input.path ?? fallback.path;
  if (typeof path !== "string" || !pathPattern.test(path))
    throw new ConfigError(`${where}.path must be a dotted path such as "traits.email", got ${JSON.stringify(path)}`);
  const limit = input.limit ?? fallback.limit ?? 0;
  if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 0 || limit > 1000)
    throw new ConfigError(`${where}.limit must be an integer from 0 (none) to 1000`);
  const priority = input.priority ?? fallback.priority ?? 100 + index;
  if (typeof priority !== "number" || !Number.isInteger(priority) || priority < 1 || priority > 10_000)
    throw new ConfigError(`${where}.priority must be an integer from 1 (highest) to 10000`);
  const blocked = input.blocked ?? [];
  if (!Array.isArray(blocked) || !blocked.every((value) => typeof value === "string"))
    throw new ConfigError(`${where}.blocked must be a list of strings`);
  return { type, path, limit, priority, blocked: new Set([...defaultBlocked, ...blocked.map((value) => value.toLowerCase())]) };
}

/** The built-in types: one userId a profile (Segment Unify's default), any number of anonymousIds, last. */
const builtIn: Record<string, Partial<IdentifierRule>> = {
  user_id: { path: "userId", limit: 1, priority: 1 },
  anonymous_id: { path: "anonymousId", limit: 0, priority: 10_000 },
};

/**
 * WAYPOST_IDENTITY_RULES: a JSON list of `{type, path, limit?, priority?,
 * blocked?}`; naming user_id or anonymous_id changes their limit, priority
 * or blocked values (not their path).
 */
export function parseIdentity(env: Record<string, string | undefined>): IdentityConfig {
  const mode = env.WAYPOST_IDENTITY ?? "on";
  if (mode !== "on" && mode !== "off") throw new ConfigError(`WAYPOST_IDENTITY must be on or off, got ${JSON.stringify(mode)}`);
  let inputs: RuleInput[] = [];
  if (env.WAYPOST_IDENTITY_RULES) {
    try {
      inputs = JSON.parse(env.WAYPOST_IDENTITY_RULES) as RuleInput[];
    } catch {
      throw new ConfigError("WAYPOST_IDENTITY_RULES must be JSON: a list of {type, path, limit, priority, blocked}");
    }
    if (!Array.isArray(inputs)) throw new ConfigError("WAYPOST_IDENTITY_RULES must be a JSON list");
  }
  const rules = new Map<string, IdentifierRule>();
  for (const [type, fallback] of Object.entries(builtIn)) rules.set(type, ruleOf({ type }, -1, fallback));
  inputs.forEach((input, index) => {
    if (typeof input !== "object" || input === null || Array.isArray(input))
      throw new ConfigError(`WAYPOST_IDENTITY_RULES[${index}] must be an object: {type, path, limit, priority, blocked}`);
    const fallback = builtIn[String(input.type)];
    if (fallback && input.path !== undefined && input.path !== fallback.path) {
      throw new ConfigError(
        `WAYPOST_IDENTITY_RULES[${index}]: ${String(input.type)} is read from ${fallback.path}; its path cannot change`,
      );
    }
    if (!fallback && rules.has(String(input.type)))
      throw new ConfigError(`WAYPOST_IDENTITY_RULES[${index}]: ${String(input.type)} is named twice`);
    rules.set(String(input.type), ruleOf(input, index, fallback ?? {}));
  });
  const sorted = [...rules.values()].sort((a, b) => a.priority - b.priority || a.type.localeCompare(b.type));
  return { enabled: mode === "on", rules: sorted, pageSize: 1000 };
}
