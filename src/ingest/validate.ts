import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { Call } from "../calls/call.js";
import { findJsonText } from "../routing/storable-text.js";
import { limits } from "./limits.js";

/** Why a call was refused, naming the field (camelCase, as in JSON). */
export interface CallProblem {
  field: string;
  message: string;
}

const stringFields = ["userId", "anonymousId", "previousId", "event", "name", "category", "groupId"] as const;
const objectFields = ["context", "integrations", "properties", "traits"] as const;

/**
 * NUL, or half of a UTF-16 surrogate pair: Postgres text and jsonb cannot
 * hold the first, UTF-8 cannot encode the second (it would be silently
 * replaced, or fail the whole statement). With the u flag a proper pair is
 * one code point, so only unpaired halves match.
 */
const unstorableText = /[\0\p{Cs}]/u;
const unstorableReason = "must not contain NUL characters or unpaired UTF-16 surrogates";

/** Checks a call (docs/limits.md lists the rules); undefined when it is valid. */
export function validateCall(call: Call): CallProblem | undefined {
  if (call.messageId.length > limits.maxMessageIdLength) {
    return { field: "messageId", message: `messageId is longer than ${limits.maxMessageIdLength} characters` };
  }
  if (unstorableText.test(call.messageId)) return { field: "messageId", message: `messageId ${unstorableReason}` };
  for (const field of stringFields) {
    if (call[field].length > limits.maxIdentifierLength) {
      return { field, message: `${field} is longer than ${limits.maxIdentifierLength} characters` };
    }
    if (unstorableText.test(call[field])) return { field, message: `${field} ${unstorableReason}` };
  }
  const required = requiredFieldProblem(call);
  if (required) return required;
  if (call.timestamp !== undefined && !isUsableDate(call.timestamp)) {
    return { field: "timestamp", message: "timestamp must be a valid date between years 1970 and 9999" };
  }
  for (const field of objectFields) {
    const value = call[field];
    if (value === undefined) continue;
    if (exceedsDepth(value, limits.maxDepth)) {
      return { field, message: `${field} is nested deeper than ${limits.maxDepth} levels` };
    }
    const at = unstorableTextPath(value);
    if (at !== undefined) return { field: `${field}${at}`, message: `${field}${at} ${unstorableReason}` };
  }
  if (call.integrations) {
    for (const [name, value] of Object.entries(call.integrations)) {
      if (typeof value !== "boolean" && (value === null || typeof value !== "object" || Array.isArray(value))) {
        return { field: `integrations.${name}`, message: `integrations.${name} must be a boolean (or an options object)` };
      }
    }
  }
  return undefined;
}

function requiredFieldProblem(call: Call): CallProblem | undefined {
  if (call.type === "alias") {
    if (!call.userId) return { field: "userId", message: "userId is required for alias" };
    if (!call.previousId) return { field: "previousId", message: "previousId is required for alias" };
    return undefined;
  }
  if (!call.userId && !call.anonymousId) {
    return { field: "userId", message: `userId or anonymousId is required for ${call.type}` };
  }
  if (call.type === "track" && !call.event) return { field: "event", message: "event is required for track" };
  if (call.type === "group" && !call.groupId) return { field: "groupId", message: "groupId is required for group" };
  return undefined;
}

function isUsableDate(date: Date): boolean {
  const ms = date.getTime();
  return Number.isFinite(ms) && ms >= 0 && ms < Date.UTC(10000, 0, 1);
}

/** Iterative, so that hostile nesting cannot overflow the stack here. */
export function exceedsDepth(root: JsonObject | JsonValue, maxDepth: number): boolean {
  const stack: Array<[JsonValue, number]> = [[root, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (value === null || typeof value !== "object") continue;
    if (depth > maxDepth) return true;
    const children = Array.isArray(value) ? value : Object.values(value);
    for (const child of children) stack.push([child as JsonValue, depth + 1]);
  }
  return false;
}

/**
 * Where in a JSON value a key or string holds unstorable text, as a path
 * (`.a[2]["odd key"]`, "" for the root); undefined when there is none.
 * Run after exceedsDepth, so depth is bounded.
 */
export function unstorableTextPath(root: JsonObject | JsonValue): string | undefined {
  const hit = findJsonText(root, "", memberPath, (text) => unstorableText.test(text));
  if (!hit) return undefined;
  return hit.key ? memberPath(hit.path, hit.text) : hit.path;
}

/** `.key` where that reads as JavaScript, else `["key"]`. */
function memberPath(path: string, key: string): string {
  return `${path}${/^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`}`;
}
