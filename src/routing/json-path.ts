/** A dotted path (`properties.total`) split once, at compile time. */
export type PathSegments = readonly string[];

export function splitPath(path: string): PathSegments {
  return path.split(".");
}

/** The value at a dotted path of a JSON document; undefined when any step is missing. */
export function valueAt(document: unknown, segments: PathSegments): unknown {
  let current = document;
  for (const segment of segments) {
    if (current === null || typeof current !== "object") return undefined;
    // Into an array only by index (`items.0.sku`), never through `length`.
    if (Array.isArray(current) && !/^\d+$/.test(segment)) return undefined;
    // Own properties only: a path never reaches a prototype (`constructor`, `__proto__`).
    if (!Object.hasOwn(current, segment)) return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}

/** What is wrong with a dotted path, or undefined. */
export function pathProblem(path: string): string | undefined {
  if (path === "") return "must not be empty";
  if (path.length > 256) return "must be at most 256 characters";
  if (path.split(".").some((segment) => segment === "")) return "must be dot-separated names without empty parts";
  return undefined;
}
