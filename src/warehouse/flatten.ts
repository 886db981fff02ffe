import { collisionName, fitIdentifier, snakeCase } from "./identifiers.js";

/**
 * Flattens an object into warehouse columns: nested keys joined by `_`,
 * each part in snake_case (`{ page: { path } }` with prefix `context` →
 * `context_page_path`), the whole name then fitted to 63 bytes. Arrays stay
 * one value (a jsonb column); null and empty objects give no column.
 *
 * Two keys of one call that make the same name (`orderId` and `order_id`)
 * both keep their values: the key already spelled as the column (or, when
 * none is, the one first in code-unit order) gets the plain name, every other
 * one the name with `_` and a hash of its own path (`order_id_1a2b3c4d`), so
 * which column a key gets does not depend on the order of the call's keys.
 */
export function flatten(value: unknown, prefix = ""): Map<string, unknown> {
  const into = new Map<string, unknown>();
  const paths = new Map<string, string>();
  let collided: Array<{ name: string; path: string; value: unknown }> | undefined;
  walk(value, prefix, prefix, (name, path, child) => {
    const other = paths.get(name);
    if (other === undefined) {
      into.set(name, child);
      paths.set(name, path);
      return;
    }
    collided ??= [];
    if (keepsPlainName(path, other, name)) {
      collided.push({ name, path: other, value: into.get(name) });
      into.set(name, child);
      paths.set(name, path);
    } else {
      collided.push({ name, path, value: child });
    }
  });
  if (collided) for (const { name, path, value: v } of collided) into.set(collisionName(name, path), v);
  return into;
}

/** Whether the key at `path` takes the plain `name` from the key at `holder`. */
function keepsPlainName(path: string, holder: string, name: string): boolean {
  const exact = (p: string) => p.replaceAll(".", "_") === name;
  if (exact(holder) !== exact(path)) return exact(path);
  return path < holder;
}

function walk(value: unknown, name: string, path: string, visit: (name: string, path: string, value: unknown) => void) {
  if (!isPlainObject(value)) return;
  for (const [key, child] of Object.entries(value)) {
    if (child === null || child === undefined) continue;
    const childName = name === "" ? snakeCase(key) : `${name}_${snakeCase(key)}`;
    const childPath = path === "" ? key : `${path}.${key}`;
    if (isPlainObject(child)) walk(child, childName, childPath, visit);
    else visit(fitIdentifier(childName), childPath, child);
  }
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
