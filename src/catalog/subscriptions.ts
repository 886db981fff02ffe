import { createRequire } from "node:module";

// The catalog's subscription language (`type = "track" and event = "Order
// Completed"`) is its own package, loaded through require like the rest of
// the catalog (catalog.ts says why).
const require = createRequire(import.meta.url);
type ParsedFql = { error?: Error } & Record<string, unknown>;
const fql = require("@segment/destination-subscriptions") as {
  parseFql(text: string): ParsedFql;
  validate(parsed: ParsedFql, event: unknown): boolean;
};

/** A subscription as routing and delivery see it: its name, whether it is on, and its condition. */
export interface SubscriptionCondition {
  name: string;
  subscribe: string;
  enabled: boolean;
}

/** A destination's subscriptions, each parsed once (per settings revision). */
export interface CompiledSubscriptions {
  /** The indexes (into the list compiled) of the enabled subscriptions that match the Segment-shaped event. */
  matching(event: unknown): number[];
  /** Whether any enabled subscription matches; stops at the first. */
  matchesAny(event: unknown): boolean;
}

// The catalog's tokenizer, for what its parser lets through (below).
const lexer = require("@segment/fql-ts") as { lex(text: string): { tokens: Array<{ type: string; value: string }> } };

/**
 * The parser's complaint about a subscription, or undefined when it parses.
 * The catalog's parser is lenient at the end of the text: `type = ` reads as
 * `type = "eos"` and `type = "page" and` as `type = "page"`, and a stray `)`
 * is ignored. What a person wrote that way is unfinished, so those are
 * refused too, from the catalog's own tokens.
 */
export function subscriptionError(subscribe: string): string | undefined {
  if (subscribe.trim() === "") return "must not be empty";
  const parsed = fql.parseFql(subscribe);
  if (parsed.error) return parsed.error.message;
  return unfinished(subscribe);
}

function unfinished(subscribe: string): string | undefined {
  const tokens = lexer.lex(subscribe).tokens.filter((token) => token.type !== "eos");
  let depth = 0;
  for (const token of tokens) {
    if (token.type === "parenleft") depth++;
    else if (token.type === "parenright" && --depth < 0) return 'has a ")" with no "(" before it';
  }
  if (depth > 0) return 'has a "(" that is not closed';
  const last = tokens.at(-1);
  if (last?.type === "operator") return `ends with ${JSON.stringify(last.value)}: the comparison has no value`;
  if (last?.type === "conditional") return `ends with ${JSON.stringify(last.value)}: a condition is missing after it`;
  return undefined;
}

/**
 * Parses each enabled subscription once. One that does not parse (stored
 * ones were checked when saved, so only a stricter catalog version could
 * make one) matches nothing: its action never runs on a condition nobody
 * can read.
 */
export function compileSubscriptions(subscriptions: readonly SubscriptionCondition[]): CompiledSubscriptions {
  const parsed = subscriptions.map((subscription) => {
    if (!subscription.enabled) return undefined;
    const result = fql.parseFql(subscription.subscribe);
    return result.error ? undefined : result;
  });
  return {
    matching(event) {
      const indexes: number[] = [];
      for (let i = 0; i < parsed.length; i++) {
        const condition = parsed[i];
        if (condition && fql.validate(condition, event)) indexes.push(i);
      }
      return indexes;
    },
    matchesAny(event) {
      for (const condition of parsed) if (condition && fql.validate(condition, event)) return true;
      return false;
    },
  };
}
