import { InvalidInputError } from "../errors.js";
import { routingLimits } from "./filter-limits.js";
import { pathProblem, splitPath, valueAt } from "./json-path.js";
import { requireStorableJson, requireStorableKey } from "./storable-text.js";

/** A compiled filter: whether a webhook body passes. */
export type CompiledFilter = (body: unknown) => boolean;

type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

const operators = new Set(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$startsWith", "$endsWith", "$contains"]);

interface CompileState {
  conditions: number;
}

/**
 * Validates a filter document and compiles it into a predicate, once per
 * settings change, so routing a call costs a few property reads, not a walk
 * of the document. Throws InvalidInputError naming the path under `field`
 * (`destination.filter.properties.total.$gte`). An empty document passes
 * every call.
 */
export function compileFilter(document: unknown, field = "filter"): CompiledFilter {
  if (!isPlainObject(document)) throw new InvalidInputError(field, "must be an object");
  const bytes = Buffer.byteLength(JSON.stringify(document));
  if (bytes > routingLimits.maxFilterBytes) {
    throw new InvalidInputError(field, `is ${bytes} bytes, over the limit of ${routingLimits.maxFilterBytes} bytes (16 KB)`);
  }
  return compileDocument(document, field, 1, { conditions: 0 });
}

function compileDocument(document: Record<string, unknown>, field: string, depth: number, state: CompileState): CompiledFilter {
  if (depth > routingLimits.maxFilterDepth) {
    throw new InvalidInputError(field, `nests deeper than ${routingLimits.maxFilterDepth} levels`);
  }
  const parts = Object.entries(document).map(([key, value]) => {
    requireStorableKey(key, field);
    return compileKey(key, value, join(field, key), depth, state);
  });
  return allOf(parts);
}

function compileKey(key: string, value: unknown, field: string, depth: number, state: CompileState): CompiledFilter {
  if (key === "$and" || key === "$or") {
    const documents = documentList(value, field);
    const parts = documents.map((doc, i) => compileDocument(doc, `${field}[${i}]`, depth + 1, state));
    return key === "$and" ? allOf(parts) : anyOf(parts);
  }
  if (key === "$not") {
    if (!isPlainObject(value)) throw new InvalidInputError(field, "must be an object (a filter document)");
    const inner = compileDocument(value, field, depth + 1, state);
    return (body) => !inner(body);
  }
  if (key.startsWith("$")) throw new InvalidInputError(field, `unknown operator (use ${[...operators, "$and", "$or", "$not"].join(", ")})`);
  const problem = pathProblem(key);
  if (problem) throw new InvalidInputError(field, `the path ${problem}`);
  const segments = splitPath(key);
  const test = compileCondition(value, field, state);
  return (body) => test(valueAt(body, segments));
}

function documentList(value: unknown, field: string): Array<Record<string, unknown>> {
  if (!Array.isArray(value) || value.length === 0) throw new InvalidInputError(field, "must be a non-empty array of filter documents");
  value.forEach((doc, i) => {
    if (!isPlainObject(doc)) throw new InvalidInputError(`${field}[${i}]`, "must be an object (a filter document)");
  });
  return value as Array<Record<string, unknown>>;
}

/** A path's condition: a literal (equality) or an object of operators, ANDed. */
function compileCondition(value: unknown, field: string, state: CompileState): (actual: unknown) => boolean {
  if (!isPlainObject(value)) {
    count(state, field);
    requireStorableJson(value, field);
    const literal = value as JsonValue;
    return (actual) => actual !== undefined && jsonEqual(actual, literal);
  }
  const entries = Object.entries(value);
  if (entries.length === 0) throw new InvalidInputError(field, "must be a literal or an object of operators, not an empty object");
  const tests = entries.map(([op, operand]) => {
    requireStorableKey(op, field);
    const opField = `${field}.${op}`;
    if (!operators.has(op)) {
      const hint = op.startsWith("$") ? "unknown operator" : "an object value holds operators only (compare whole objects with $eq)";
      throw new InvalidInputError(opField, hint);
    }
    count(state, opField);
    requireStorableJson(operand, opField);
    return compileOperator(op, operand, opField);
  });
  return tests.length === 1 ? tests[0]! : (actual) => tests.every((t) => t(actual));
}

function compileOperator(op: string, operand: unknown, field: string): (actual: unknown) => boolean {
  switch (op) {
    case "$eq":
      return (actual) => actual !== undefined && jsonEqual(actual, operand as JsonValue);
    case "$ne":
      return (actual) => actual === undefined || !jsonEqual(actual, operand as JsonValue);
    case "$gt":
    case "$gte":
    case "$lt":
    case "$lte":
      return compileComparison(op, operand, field);
    case "$in":
    case "$nin": {
      const list = literalList(operand, field);
      if (op === "$in") return (actual) => actual !== undefined && list.some((v) => jsonEqual(actual, v));
      return (actual) => actual === undefined || !list.some((v) => jsonEqual(actual, v));
    }
    case "$exists": {
      if (typeof operand !== "boolean") throw new InvalidInputError(field, "must be true or false");
      return (actual) => (actual !== undefined) === operand;
    }
    case "$startsWith":
    case "$endsWith": {
      if (typeof operand !== "string") throw new InvalidInputError(field, "must be a string");
      if (op === "$startsWith") return (actual) => typeof actual === "string" && actual.startsWith(operand);
      return (actual) => typeof actual === "string" && actual.endsWith(operand);
    }
    default:
      return compileContains(operand, field);
  }
}

function compileComparison(op: string, operand: unknown, field: string): (actual: unknown) => boolean {
  if (typeof operand !== "number" || !Number.isFinite(operand)) throw new InvalidInputError(field, "must be a number");
  const n = operand;
  switch (op) {
    case "$gt":
      return (actual) => typeof actual === "number" && actual > n;
    case "$gte":
      return (actual) => typeof actual === "number" && actual >= n;
    case "$lt":
      return (actual) => typeof actual === "number" && actual < n;
    default:
      return (actual) => typeof actual === "number" && actual <= n;
  }
}

/** $contains: a substring of a string, or an element of an array. */
function compileContains(operand: unknown, field: string): (actual: unknown) => boolean {
  if (operand === null || typeof operand === "object") throw new InvalidInputError(field, "must be a string, a number or a boolean");
  return (actual) => {
    if (typeof actual === "string") return typeof operand === "string" && actual.includes(operand);
    if (Array.isArray(actual)) return actual.some((element) => element === operand);
    return false;
  };
}

function literalList(operand: unknown, field: string): JsonValue[] {
  if (!Array.isArray(operand)) throw new InvalidInputError(field, "must be an array");
  if (operand.length > routingLimits.maxListValues) {
    throw new InvalidInputError(field, `has ${operand.length} values, over the limit of ${routingLimits.maxListValues}`);
  }
  return operand as JsonValue[];
}

function count(state: CompileState, field: string): void {
  state.conditions += 1;
  if (state.conditions > routingLimits.maxFilterConditions) {
    throw new InvalidInputError(field, `is past the limit of ${routingLimits.maxFilterConditions} conditions per filter`);
  }
}

function allOf(parts: readonly CompiledFilter[]): CompiledFilter {
  if (parts.length === 0) return () => true;
  if (parts.length === 1) return parts[0]!;
  return (body) => parts.every((part) => part(body));
}

function anyOf(parts: readonly CompiledFilter[]): CompiledFilter {
  return (body) => parts.some((part) => part(body));
}

function join(field: string, key: string): string {
  return `${field}.${key}`;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Deep equality of JSON values; numbers by value, objects by their keys. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((v, i) => jsonEqual(v, other[i]));
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}
