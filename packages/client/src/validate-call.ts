import { InvalidCallError } from "./errors.js";
import type { CallInputs, CallType } from "./types.js";

/** The server's limits that a single call must meet. */
export const callLimits = {
  /** One call's JSON encoding, in bytes (32 KB). */
  maxCallBytes: 32 * 1024,
  maxMessageIdLength: 255,
  /** userId, anonymousId, previousId, groupId, event, name, category. */
  maxIdentifierLength: 1024,
} as const;

/**
 * The server counts a call's size on the body it stores, which adds
 * `"version":1,"type":"identify",`, `"context":{},` when absent and a
 * `"timestamp":"…Z",` when absent (85 bytes at most) to what the client sends.
 * Counting them here means a call the client accepts is never refused by the
 * server for its size.
 */
const serverOverheadBytes = 96;

/** A validated call, JSON-encoded once, ready to queue. */
export interface PreparedCall {
  type: CallType;
  messageId: string;
  /** The call message in Connect JSON, e.g. `{"messageId":…,"event":…}`. */
  json: string;
  /** UTF-8 length of `json`. */
  bytes: number;
}

type Source = Record<string, unknown>;
type Wire = Record<string, unknown>;

/**
 * One builder per call type, each an object literal of fixed shape: V8
 * then reads and writes named properties of one hidden class, which is most
 * of what keeps a call cheap. Absent fields stay `undefined`, which
 * `JSON.stringify` leaves out. Only the fields of the type are copied.
 */
const builders: { [K in CallType]: (s: Source, id: string) => Wire } = {
  identify: (s, id) => ({
    messageId: id,
    userId: str("userId", s.userId),
    anonymousId: str("anonymousId", s.anonymousId),
    traits: obj("traits", s.traits),
  }),
  track: (s, id) => ({
    messageId: id,
    userId: str("userId", s.userId),
    anonymousId: str("anonymousId", s.anonymousId),
    event: str("event", s.event),
    properties: obj("properties", s.properties),
  }),
  page: (s, id) => ({
    messageId: id,
    userId: str("userId", s.userId),
    anonymousId: str("anonymousId", s.anonymousId),
    name: str("name", s.name),
    category: str("category", s.category),
    properties: obj("properties", s.properties),
  }),
  screen: (s, id) => ({
    messageId: id,
    userId: str("userId", s.userId),
    anonymousId: str("anonymousId", s.anonymousId),
    name: str("name", s.name),
    properties: obj("properties", s.properties),
  }),
  group: (s, id) => ({
    messageId: id,
    userId: str("userId", s.userId),
    anonymousId: str("anonymousId", s.anonymousId),
    groupId: str("groupId", s.groupId),
    traits: obj("traits", s.traits),
  }),
  alias: (s, id) => ({
    messageId: id,
    userId: str("userId", s.userId),
    previousId: str("previousId", s.previousId),
  }),
};

/**
 * Checks a call with the server's rules and encodes it. Throws an
 * InvalidCallError naming the field for a call the server would refuse
 * (except nesting deeper than 64 levels, which the server reports per call
 * and the client does not walk for, to keep calls cheap).
 */
export function prepareCall<T extends CallType>(type: T, input: CallInputs[T], newId: () => string): PreparedCall {
  if (input === null || typeof input !== "object") {
    throw new InvalidCallError("call", `${type}() needs a call object, got ${input === null ? "null" : typeof input}`);
  }
  const source = input as unknown as Source;
  const messageId = messageIdOf(source.messageId, newId);
  const wire = builders[type](source, messageId);
  checkRequired(type, wire);
  if (source.timestamp !== undefined && source.timestamp !== null) wire.timestamp = isoTimestamp(source.timestamp);
  if (source.context !== undefined && source.context !== null) wire.context = obj("context", source.context);
  if (source.integrations !== undefined && source.integrations !== null) {
    wire.integrations = checkIntegrations(obj("integrations", source.integrations) as Source);
  }
  const json = encode(type, wire);
  const bytes = utf8Length(json);
  if (bytes + serverOverheadBytes > callLimits.maxCallBytes) {
    throw new InvalidCallError(
      "message",
      `${type} call is ${bytes + serverOverheadBytes} bytes as JSON, over the limit of ` +
        `${callLimits.maxCallBytes} bytes (32 KB) per call`,
    );
  }
  return { type, messageId, json, bytes };
}

/** An optional string field: undefined when absent or empty. */
function str(field: string, value: unknown): string | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  return checkString(field, value);
}

/** An optional object field: undefined when absent. */
function obj(field: string, value: unknown): object | undefined {
  if (value === undefined || value === null) return undefined;
  return checkObject(field, value);
}

function messageIdOf(value: unknown, newId: () => string): string {
  if (value === undefined || value === null || value === "") return newId();
  const id = checkString("messageId", value);
  if (id.length > callLimits.maxMessageIdLength) {
    throw new InvalidCallError("messageId", `messageId is longer than ${callLimits.maxMessageIdLength} characters`);
  }
  return id;
}

function checkString(field: string, value: unknown): string {
  if (typeof value !== "string") throw new InvalidCallError(field, `${field} must be a string, got ${typeof value}`);
  if (value.length > callLimits.maxIdentifierLength) {
    throw new InvalidCallError(field, `${field} is longer than ${callLimits.maxIdentifierLength} characters`);
  }
  return value;
}

function checkRequired(type: CallType, wire: Record<string, unknown>): void {
  if (type === "alias") {
    if (!wire.userId) throw new InvalidCallError("userId", "userId is required for alias");
    if (!wire.previousId) throw new InvalidCallError("previousId", "previousId is required for alias");
    return;
  }
  if (!wire.userId && !wire.anonymousId) {
    throw new InvalidCallError("userId", `userId or anonymousId is required for ${type}`);
  }
  if (type === "track" && !wire.event) throw new InvalidCallError("event", "event is required for track");
  if (type === "group" && !wire.groupId) throw new InvalidCallError("groupId", "groupId is required for group");
}

/** The server stores timestamps as UTC with milliseconds; years 1970 to 9999. */
function isoTimestamp(value: unknown): string {
  const date = value instanceof Date ? value : typeof value === "string" ? new Date(value) : undefined;
  if (!date) throw new InvalidCallError("timestamp", `timestamp must be a Date or an ISO 8601 string, got ${typeof value}`);
  const ms = date.getTime();
  if (!Number.isFinite(ms) || ms < 0 || ms >= Date.UTC(10000, 0, 1)) {
    throw new InvalidCallError("timestamp", `timestamp must be a valid date between years 1970 and 9999, got ${String(value)}`);
  }
  return date.toISOString();
}

function checkObject(field: string, value: unknown): object {
  // A toJSON() (Date, Map wrappers, class instances) could encode as a
  // non-object, which the server's Struct field cannot hold.
  if (typeof value !== "object" || Array.isArray(value) || typeof (value as { toJSON?: unknown }).toJSON === "function") {
    throw new InvalidCallError(field, `${field} must be a plain object, got ${Array.isArray(value) ? "an array" : typeof value}`);
  }
  return value as object;
}

function checkIntegrations(integrations: Source): Source {
  for (const name in integrations) {
    const value = integrations[name];
    if (typeof value === "boolean" || value === undefined) continue;
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      throw new InvalidCallError(`integrations.${name}`, `integrations.${name} must be a boolean (or an options object)`);
    }
  }
  return integrations;
}

function encode(type: CallType, wire: Record<string, unknown>): string {
  try {
    return JSON.stringify(wire);
  } catch (error) {
    // BigInt values and circular references end up here.
    throw new InvalidCallError("message", `${type} call cannot be encoded as JSON: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

let scratch: Uint8Array | undefined;
let encoder: TextEncoder | undefined;

/**
 * UTF-8 length of a string. `encodeInto` a reused buffer (allocated on first
 * use, big enough for any call under the limit) is native in Node and
 * browsers alike, and a few times faster than counting in JavaScript.
 */
export function utf8Length(text: string): number {
  encoder ??= new TextEncoder();
  if (text.length > callLimits.maxCallBytes) return encoder.encode(text).length; // over the limit anyway; rare
  scratch ??= new Uint8Array(callLimits.maxCallBytes * 3);
  return encoder.encodeInto(text, scratch).written;
}
