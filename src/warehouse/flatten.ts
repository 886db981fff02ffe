import { fitIdentifier, snakeCase } from "./identifiers.js";

/**
 * Flattens an object into warehouse columns: nested keys joined by `_`,
 * each part in snake_case (`{ page: { path } }` with prefix `context` →
 * `context_page_path`), the whole name then fitted to 63 bytes. Arrays stay
 * one value (a jsonb column); null and empty objects give no column. Later
 * keys win when two names meet (`userId` and `user_id`).
 */
export function flatten(value: unknown, prefix = "", into: Map<string, unknown> = new Map()): Map<string, unknown> {
  if (!isPlainObject(value)) return into;
  for (const [key, child] of Object.entries(value)) {
    if (child === null || child === undefined) continue;
    const name = prefix === "" ? snakeCase(key) : `${prefix}_${snakeCase(key)}`;
    if (isPlainObject(child)) flatten(child, name, into);
    else into.set(fitIdentifier(name), child);
  }
  return into;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
