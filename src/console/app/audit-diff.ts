import type { JsonObject, JsonValue } from "@bufbuild/protobuf";

// An audit row's diff in a line a person reads: `name: "a" → "b"` per
// field. The server has already replaced secrets with "changed" (or
// "(set)" inside a request), so nothing here can show one.

const longest = 80;

function shown(value: JsonValue | undefined): string {
  if (value === undefined) return "(none)";
  const text = JSON.stringify(value);
  return text.length > longest ? `${text.slice(0, longest)}…` : text;
}

function isChange(value: JsonValue | undefined): value is { from?: JsonValue; to?: JsonValue } {
  if (!value || typeof value !== "object" || Array.isArray(value)) return false;
  const names = Object.keys(value);
  return names.length > 0 && names.every((name) => name === "from" || name === "to");
}

/** One entry of a diff: a change from and to, a secret that "changed", or what a request asked (a retry, a rotation). */
function entryText(field: string, value: JsonValue | undefined): string {
  if (value === "changed") return `${field}: changed`;
  if (isChange(value)) {
    if (!("from" in value)) return `${field}: ${shown(value.to)}`;
    return `${field}: ${shown(value.from)} → ${shown(value.to)}`;
  }
  return `${field}: ${shown(value)}`;
}

/** Each changed field in words; empty for a row without a diff. */
export function diffLines(diff: JsonObject | undefined): string[] {
  if (!diff) return [];
  return Object.entries(diff).map(([field, value]) => entryText(field, value));
}
