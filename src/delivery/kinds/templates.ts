import { InvalidInputError } from "../../errors.js";

/** What a routing key or subject template may name about a call. */
export interface TemplateValues {
  /** The call type: track, identify, page, screen, group, alias (or delete). */
  type: string;
  /** The track call's event name, as given (it is snake_cased here); empty or absent for other types. */
  event?: string | undefined;
  sourceId: string;
  destinationId: string;
}

export const templatePlaceholders = ["type", "event", "sourceId", "destinationId"] as const;
type Placeholder = (typeof templatePlaceholders)[number];

/** A template parsed once per settings revision: rendering joins its parts. */
export interface Template {
  readonly source: string;
  render(values: TemplateValues): string;
}

export interface TemplateRules {
  /** Longest template accepted, in characters. */
  maxLength: number;
  /** Characters the literal text may not hold (beyond the wildcards), e.g. whitespace in a NATS subject. */
  forbidden?: RegExp | undefined;
}

const wildcards = /[*>]/;
const placeholderPattern = /\{([^{}]*)\}/g;

/**
 * Parses a routing-key or subject template such as `waypost.{type}.{event}`.
 * Dots separate tokens (NATS subjects; AMQP topic exchanges read routing
 * keys the same way). The placeholders always render a non-empty token
 * part without dots or wildcards ({event} in snake_case, ids as uuids), so
 * the literal text alone decides whether a rendered value can hold an
 * empty token or a wildcard: such a template is refused here, naming the
 * field, instead of failing at every delivery.
 */
export function parseTemplate(field: string, source: string, rules: TemplateRules): Template {
  if (source.length > rules.maxLength) throw new InvalidInputError(field, `is longer than ${rules.maxLength} characters`);
  const parts: Part[] = [];
  // A token is non-empty when it holds literal text or a placeholder.
  let tokenFilled = false;
  let at = 0;
  const literal = (text: string) => {
    if (wildcards.test(text)) throw new InvalidInputError(field, `${JSON.stringify(source)} contains a wildcard (* or >)`);
    if (/[{}]/.test(text)) throw new InvalidInputError(field, `${JSON.stringify(source)} has an unmatched { or }`);
    if (rules.forbidden?.test(text)) {
      throw new InvalidInputError(field, `${JSON.stringify(source)} contains a character not allowed here (${rules.forbidden.source})`);
    }
    const tokens = text.split(".");
    for (let i = 0; i < tokens.length; i++) {
      if (i > 0) {
        if (!tokenFilled) throw emptyToken(field, source);
        tokenFilled = false;
      }
      if (tokens[i] !== "") tokenFilled = true;
    }
    if (text !== "") parts.push({ literal: text });
  };
  for (const match of source.matchAll(placeholderPattern)) {
    literal(source.slice(at, match.index));
    const name = match[1]!;
    if (!(templatePlaceholders as readonly string[]).includes(name)) {
      throw new InvalidInputError(
        field,
        `unknown placeholder {${name.slice(0, 40)}}: use ${templatePlaceholders.map((p) => `{${p}}`).join(", ")}`,
      );
    }
    parts.push({ placeholder: name as Placeholder });
    tokenFilled = true;
    at = match.index + match[0].length;
  }
  literal(source.slice(at));
  if (!tokenFilled) throw emptyToken(field, source);
  return { source, render: compile(parts) };
}

function emptyToken(field: string, source: string): InvalidInputError {
  return new InvalidInputError(field, `${JSON.stringify(source)} can produce an empty token (nothing between two dots, or at either end)`);
}

type Part = { literal: string; placeholder?: undefined } | { placeholder: Placeholder };

/** A renderer over the parsed parts: one string concatenation per part, nothing else allocated. */
function compile(parts: readonly Part[]): (values: TemplateValues) => string {
  if (parts.length === 1 && parts[0]!.placeholder !== undefined) {
    const only = parts[0]!.placeholder;
    return (values) => placeholderValue(only, values);
  }
  return (values) => {
    let out = "";
    for (const part of parts) out += part.placeholder === undefined ? part.literal : placeholderValue(part.placeholder, values);
    return out;
  };
}

function placeholderValue(name: Placeholder, values: TemplateValues): string {
  switch (name) {
    case "type":
      return values.type;
    case "event":
      return templateSnakeCase(values.event ?? "");
    case "sourceId":
      return values.sourceId;
    case "destinationId":
      return values.destinationId;
  }
}

const snakeCache = new Map<string, string>();
const maxCached = 10_000;

/**
 * An event name as a token: `Order Completed` → `order_completed`,
 * `orderCompleted` → `order_completed`; every run of characters outside
 * [a-z0-9_] becomes one `_`, underscores at either end go, and a name left
 * empty becomes `_`. The same few names come with every call: remembered
 * (bounded; it starts over when full).
 */
export function templateSnakeCase(name: string): string {
  let snake = snakeCache.get(name);
  if (snake === undefined) {
    if (snakeCache.size >= maxCached) snakeCache.clear();
    // Each (?<!...) lets only the start of a run be tried: linear, where
    // /([A-Z]+)([A-Z][a-z])/ would be quadratic in a long run of capitals.
    snake =
      name
        .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
        .replace(/(?<![A-Z])([A-Z]+)([A-Z][a-z])/g, "$1_$2")
        .toLowerCase()
        .replace(/[^a-z0-9_]+/g, "_")
        .replace(/^_+|(?<!_)_+$/g, "") || "_";
    snakeCache.set(name, snake);
  }
  return snake;
}
