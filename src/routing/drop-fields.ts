import { InvalidInputError } from "../errors.js";
import { routingLimits } from "./filter-limits.js";
import { pathProblem, splitPath } from "./json-path.js";

/** Validates dropped field paths (at most 50 dotted paths), naming the bad one. */
export function validateDropFields(paths: readonly string[], field = "dropFields"): void {
  if (paths.length > routingLimits.maxDropFields) {
    throw new InvalidInputError(field, `has ${paths.length} paths, over the limit of ${routingLimits.maxDropFields}`);
  }
  paths.forEach((path, i) => {
    const problem = pathProblem(path);
    if (problem) throw new InvalidInputError(`${field}[${i}]`, problem);
  });
}

/**
 * Removes each path from a body (a parsed copy the caller owns); a path that
 * is not there is skipped. Returns whether anything was removed.
 */
export function dropFields(body: Record<string, unknown>, paths: readonly string[]): boolean {
  let removed = false;
  for (const path of paths) {
    const segments = splitPath(path);
    let parent: unknown = body;
    for (const segment of segments.slice(0, -1)) {
      if (parent === null || typeof parent !== "object" || !Object.hasOwn(parent, segment)) {
        parent = undefined;
        break;
      }
      parent = (parent as Record<string, unknown>)[segment];
    }
    const last = segments[segments.length - 1]!;
    if (parent !== null && typeof parent === "object" && !Array.isArray(parent) && Object.hasOwn(parent, last)) {
      delete (parent as Record<string, unknown>)[last];
      removed = true;
    }
  }
  return removed;
}
