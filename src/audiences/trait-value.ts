import { toJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema, type Value } from "@bufbuild/protobuf/wkt";
import { limits } from "../ingest/limits.js";
import { hasLoneSurrogate } from "./user-id.js";

/**
 * The JSON text of a computed trait's value, as JSON.stringify writes it
 * (so exactly as an ordinary call would carry it), or a reason it cannot be
 * used. The text is what the identify call carries; Postgres compares values
 * as jsonb, so `{"a":1,"b":2}` and `{"b":2,"a":1.0}` count as unchanged.
 */
export function traitValueText(value: Value): { text: string } | { problem: string } {
  let json: JsonValue;
  try {
    // Throws for a Value with no kind set and for NaN or Infinity.
    json = toJson(ValueSchema, value);
  } catch (error) {
    return { problem: error instanceof Error ? error.message : String(error) };
  }
  const problem = jsonProblem(json, 0);
  if (problem) return { problem };
  return { text: JSON.stringify(json) };
}

/**
 * jsonb refuses \u0000 and lone surrogates, which JSON.stringify writes as
 * escapes: caught here, so the error names the user instead of failing the
 * whole sync inside Postgres.
 */
function jsonProblem(value: JsonValue, depth: number): string | undefined {
  if (depth > limits.maxDepth) return `is nested deeper than ${limits.maxDepth} levels`;
  if (typeof value === "string") return stringProblem(value);
  if (value === null || typeof value !== "object") return undefined;
  if (Array.isArray(value)) {
    for (const item of value) {
      const problem = jsonProblem(item, depth + 1);
      if (problem) return problem;
    }
    return undefined;
  }
  for (const [key, item] of Object.entries(value)) {
    const problem = stringProblem(key) ?? jsonProblem(item, depth + 1);
    if (problem) return problem;
  }
  return undefined;
}

function stringProblem(text: string): string | undefined {
  if (text.includes("\0")) return "contains a NUL character, which cannot be stored";
  if (hasLoneSurrogate(text)) return "contains a lone surrogate (not well-formed Unicode)";
  return undefined;
}
