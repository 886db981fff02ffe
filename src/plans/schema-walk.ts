import { InvalidInputError } from "../errors.js";
import { pointerToPath } from "./json-path.js";
import { linearPattern, UnsupportedPatternError } from "./linear-pattern.js";

/**
 * Keywords whose value is a schema (or a list or map of schemas), by how
 * they apply: to the same value (`allOf`, `if`...) or to a part of it
 * (`properties`, `items`...). Both drafts a plan may use are covered.
 */
const inPlace = { single: ["not", "if", "then", "else"], list: ["allOf", "anyOf", "oneOf"], map: ["dependentSchemas", "dependencies"] };
const descending = {
  single: ["additionalProperties", "propertyNames", "items", "contains", "additionalItems", "unevaluatedItems", "unevaluatedProperties"],
  list: ["prefixItems", "items"],
  map: ["properties", "patternProperties"],
};
/** Hold schemas that only apply when referred to. */
const containers = ["$defs", "definitions"];

interface SchemaNode {
  /** JSON pointer of the schema inside the root schema. */
  pointer: string;
  schema: Record<string, unknown>;
  /** The base URI its references are resolved against (the nearest `$id`). */
  base: string;
}

interface Edge {
  to: string;
  /** A `$ref` edge: reported as the place of a loop. */
  ref: boolean;
}

/**
 * Checks what compiling cannot: a `pattern` or `patternProperties` key the
 * linear-time engine refuses, and a `$ref` loop that never moves into the
 * value (`{"$ref": "#"}`, or `#/$defs/a` referring to `#/$defs/b` and back),
 * which would recurse without end on every call. A recursive schema that
 * moves into the value on each turn (a tree of `children`) ends with the
 * value and is accepted. InvalidInputError names the path under `at`.
 */
export function checkSchemaEvaluable(at: string, root: unknown): void {
  if (!isObject(root)) return;
  const nodes = new Map<string, SchemaNode>();
  /** Where each resource (`$id`) and anchor is: absolute URI → pointer. */
  const places = new Map<string, string>();
  const inPlaceEdges = new Map<string, Edge[]>();
  const visit = (pointer: string, schema: unknown, parentBase: string): void => {
    if (!isObject(schema)) return;
    let base = parentBase;
    if (typeof schema.$id === "string") {
      const id = resolve(schema.$id, parentBase);
      if (id !== undefined && !schema.$id.startsWith("#")) {
        base = withoutFragment(id);
        places.set(base, pointer);
      } else if (id !== undefined) places.set(id, pointer);
    }
    nodes.set(pointer, { pointer, schema, base });
    checkPatterns(at, pointer, schema);
    for (const key of ["$anchor", "$dynamicAnchor"]) if (typeof schema[key] === "string") places.set(`${base}#${schema[key]}`, pointer);
    const edges: Edge[] = [];
    inPlaceEdges.set(pointer, edges);
    forEachChild(schema, (childPointer, child, applies) => {
      if (applies === "in-place") edges.push({ to: `${pointer}${childPointer}`, ref: false });
      visit(`${pointer}${childPointer}`, child, base);
    });
  };
  places.set(rootBase, "");
  visit("", root, rootBase);
  for (const node of nodes.values()) {
    for (const key of ["$ref", "$dynamicRef"]) {
      const ref = node.schema[key];
      if (typeof ref !== "string") continue;
      const target = resolveRef(ref, node.base, places);
      if (target !== undefined && nodes.has(target)) inPlaceEdges.get(node.pointer)!.push({ to: target, ref: true });
    }
  }
  const loop = findLoop(inPlaceEdges);
  if (loop !== undefined) {
    throw new InvalidInputError(
      pointerToPath(at, `${loop}/$ref`),
      "refers back to itself without moving into the value (a $ref loop): the schema cannot be evaluated",
    );
  }
}

/** The base URI of a schema without `$id`: references are resolved against it as a validator would. */
const rootBase = "waypost:/plan-schema";

function resolve(reference: string, base: string): string | undefined {
  try {
    return new URL(reference, base).href;
  } catch {
    return undefined;
  }
}

function withoutFragment(uri: string): string {
  const hash = uri.indexOf("#");
  return hash === -1 ? uri : uri.slice(0, hash);
}

/** The pointer a reference names inside this schema (a resource and a JSON pointer or an anchor); undefined for one outside it. */
function resolveRef(ref: string, base: string, places: ReadonlyMap<string, string>): string | undefined {
  const uri = resolve(ref, base);
  if (uri === undefined) return undefined;
  const resource = places.get(withoutFragment(uri));
  const hash = uri.indexOf("#");
  const fragment = hash === -1 ? "" : uri.slice(hash + 1);
  if (fragment === "") return resource;
  if (fragment.startsWith("/")) {
    if (resource === undefined) return undefined;
    try {
      return `${resource}${decodeURIComponent(fragment)}`;
    } catch {
      return undefined;
    }
  }
  return places.get(uri);
}

function checkPatterns(at: string, pointer: string, schema: Record<string, unknown>): void {
  const check = (source: string, where: string) => {
    try {
      linearPattern(source);
    } catch (error) {
      if (error instanceof UnsupportedPatternError) throw new InvalidInputError(pointerToPath(at, `${pointer}${where}`), error.message);
      throw error;
    }
  };
  if (typeof schema.pattern === "string") check(schema.pattern, "/pattern");
  if (isObject(schema.patternProperties)) {
    for (const source of Object.keys(schema.patternProperties)) check(source, `/patternProperties/${escapePointer(source)}`);
  }
}

type Applies = "in-place" | "descending" | "container";

function forEachChild(schema: Record<string, unknown>, each: (pointer: string, child: unknown, applies: Applies) => void): void {
  for (const [applies, kinds] of [
    ["in-place", inPlace],
    ["descending", descending],
  ] as const) {
    for (const key of kinds.single) if (key in schema && !Array.isArray(schema[key])) each(`/${escapePointer(key)}`, schema[key], applies);
    for (const key of kinds.list) {
      const list = schema[key];
      if (Array.isArray(list)) for (const [index, child] of list.entries()) each(`/${escapePointer(key)}/${index}`, child, applies);
    }
    for (const key of kinds.map) {
      const map = schema[key];
      if (!isObject(map)) continue;
      for (const [name, child] of Object.entries(map)) each(`/${escapePointer(key)}/${escapePointer(name)}`, child, applies);
    }
  }
  for (const key of containers) {
    const map = schema[key];
    if (!isObject(map)) continue;
    for (const [name, child] of Object.entries(map)) each(`/${escapePointer(key)}/${escapePointer(name)}`, child, "container");
  }
}

/** A node on a cycle of in-place edges that contains a `$ref` edge (iterative, so a deep schema cannot overflow the stack). */
function findLoop(edges: ReadonlyMap<string, Edge[]>): string | undefined {
  const state = new Map<string, "open" | "done">();
  for (const start of edges.keys()) {
    if (state.has(start)) continue;
    const stack: Array<{ node: string; next: number; via: Edge | undefined }> = [{ node: start, next: 0, via: undefined }];
    state.set(start, "open");
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const out = edges.get(top.node) ?? [];
      if (top.next >= out.length) {
        state.set(top.node, "done");
        stack.pop();
        continue;
      }
      const edge = out[top.next++]!;
      const seen = state.get(edge.to);
      if (seen === "open") {
        // The cycle runs from edge.to up the stack to here: name the first $ref on it.
        const from = stack.findIndex((frame) => frame.node === edge.to);
        for (let i = from + 1; i < stack.length; i += 1) if (stack[i]!.via!.ref) return stack[i - 1]!.node;
        return top.node;
      }
      if (seen === undefined) {
        state.set(edge.to, "open");
        stack.push({ node: edge.to, next: 0, via: edge });
      }
    }
  }
  return undefined;
}

function escapePointer(key: string): string {
  return key.replace(/~/g, "~0").replace(/\//g, "~1");
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
