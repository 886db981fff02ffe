import { keySegment } from "./json-path.js";
import { linearPattern, type LinearPattern } from "./linear-pattern.js";
import type { JsonSchema } from "./plan-document.js";

/**
 * Which keys an object schema names, read from its `properties`,
 * `patternProperties` and `additionalProperties`: what "a property the plan
 * does not name" means. A key that none of them names is unplanned unless
 * the schema leaves the object open: no `properties` at all, or
 * `additionalProperties` set to true or to a schema. Composition keywords
 * (allOf, $ref...) are not followed: a schema built that way is open.
 */
export interface PlannedShape {
  names: Map<string, PlannedShape | undefined>;
  /** On the linear-time engine, as Ajv's are: keys come from write-key holders. */
  patterns: LinearPattern[];
  open: boolean;
}

export function plannedShape(schema: JsonSchema | undefined): PlannedShape | undefined {
  if (schema === undefined || typeof schema === "boolean") return undefined;
  const properties = asObject(schema.properties);
  const patternProperties = asObject(schema.patternProperties);
  const additional = schema.additionalProperties;
  if (!properties && !patternProperties && additional !== false) return undefined;
  const names = new Map<string, PlannedShape | undefined>();
  for (const [key, child] of Object.entries(properties ?? {})) names.set(key, plannedShape(child as JsonSchema));
  const patterns = Object.keys(patternProperties ?? {}).flatMap((source) => {
    try {
      return [linearPattern(source)];
    } catch {
      return [];
    }
  });
  return { names, patterns, open: additional !== undefined && additional !== false };
}

function asObject(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** A key the shape does not plan, seen in a value: its path and the value. */
export interface UnplannedKey {
  path: string;
  value: unknown;
}

/**
 * The keys of `value` that `shape` does not plan (nested objects too, where
 * the shape describes them), and, when `strip` is set, a copy of `value`
 * without them (the same object when nothing was removed).
 */
export function findUnplanned(
  value: Record<string, unknown>,
  shape: PlannedShape,
  path: string,
  strip: boolean,
  out: UnplannedKey[],
): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const [key, child] of Object.entries(value)) {
    const childPath = `${path}${keySegment(key)}`;
    if (shape.names.has(key)) {
      const childShape = shape.names.get(key);
      if (childShape && child !== null && typeof child === "object" && !Array.isArray(child)) {
        const kept = findUnplanned(child as Record<string, unknown>, childShape, childPath, strip, out);
        if (kept !== child) {
          copy ??= { ...value };
          copy[key] = kept;
        }
      }
      continue;
    }
    if (shape.open || shape.patterns.some((pattern) => pattern.test(key))) continue;
    out.push({ path: childPath, value: child });
    if (strip) {
      copy ??= { ...value };
      delete copy[key];
    }
  }
  return copy ?? value;
}
