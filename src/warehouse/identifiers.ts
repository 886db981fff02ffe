import { createHash } from "node:crypto";

/** Postgres truncates identifiers past 63 bytes (NAMEDATALEN - 1); longer names are cut here first, with a hash. */
export const maxIdentifierBytes = 63;

/**
 * The snake_case form of a name, as the analytics-warehouse layout writes
 * table and column names: `Order Completed` → `order_completed`, `userId` →
 * `user_id`. Letters and digits of any script are kept; everything else
 * (quotes, semicolons, spaces) becomes one `_`. A name with no letter or
 * digit at all gets a name from its hash, so it still has a column of its own.
 */
export function snakeCase(name: string): string {
  // The same few keys come in every call: remember them (bounded; it starts over when full).
  let snake = snakeCache.get(name);
  if (snake === undefined) {
    if (snakeCache.size >= maxCached) snakeCache.clear();
    snake = computeSnakeCase(name);
    snakeCache.set(name, snake);
  }
  return snake;
}

const snakeCache = new Map<string, string>();
const maxCached = 10_000;

function computeSnakeCase(name: string): string {
  // Each (?<!...) lets only the start of a run be tried: linear, where
  // /(\p{Lu}+)(\p{Lu}\p{Ll})/ would be quadratic in a long run of capitals.
  const snake = name
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, "$1_$2")
    .replace(/(?<!\p{Lu})(\p{Lu}+)(\p{Lu}\p{Ll})/gu, "$1_$2")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, "_")
    .replace(/^_+|(?<!_)_+$/g, "");
  return snake === "" ? `_${shortHash(name)}` : snake;
}

/**
 * A name that fits Postgres' 63 bytes. Longer ones keep their first bytes
 * (cut on a character boundary) and end with `_` and a hash of the whole
 * name, so two long names that share a beginning stay two columns.
 */
export function fitIdentifier(name: string): string {
  if (Buffer.byteLength(name) <= maxIdentifierBytes) return name;
  const suffix = `_${shortHash(name)}`;
  let kept = "";
  let bytes = 0;
  for (const char of name) {
    const size = Buffer.byteLength(char);
    if (bytes + size > maxIdentifierBytes - suffix.length) break;
    kept += char;
    bytes += size;
  }
  return kept + suffix;
}

/**
 * The column of a key whose name another key of the same call already has
 * (`orderId` beside `order_id`): the name, `_` and a hash of the key's path
 * as sent, so the same key always gets the same column.
 */
export function collisionName(name: string, path: string): string {
  return fitIdentifier(`${name}_${shortHash(path)}`);
}

/** The identifier a warehouse uses for a user-given name: snake_case, at most 63 bytes. */
export function warehouseName(name: string): string {
  return fitIdentifier(snakeCase(name));
}

/**
 * An identifier as SQL text: always double-quoted, inner quotes doubled, so
 * no name (an event called `x"; DROP TABLE tracks; --`) can change a statement.
 */
export function quoteIdent(name: string): string {
  if (name.includes("\u0000")) throw new Error("identifier contains a NUL character");
  return `"${name.replace(/"/g, '""')}"`;
}

/** `"schema"."table"`. */
export function qualified(schema: string, table: string): string {
  return `${quoteIdent(schema)}.${quoteIdent(table)}`;
}

function shortHash(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 8);
}
