import type { JsonObject } from "@bufbuild/protobuf";

/**
 * JSON typed into a field that must hold an object (a filter, a mapping):
 * {} when empty (none), the object, or what is wrong with the text.
 */
export function parseJsonObject(text: string): { object: JsonObject; problem?: undefined } | { problem: string } {
  if (text.trim() === "") return { object: {} };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { problem: `is not JSON: ${(error as Error).message}` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { problem: "must be a JSON object" };
  return { object: value as JsonObject };
}
