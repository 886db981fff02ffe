import type { JsonObject } from "@bufbuild/protobuf";
import { callTypes, emptyCall, isCallType, unknownCallType, type Call, type CallType } from "../calls/call.js";
import { limits } from "../ingest/limits.js";
import { CompatError } from "./errors.js";
import {
  FieldProblem,
  isPlainObject,
  parseIsoTimestamp,
  readId,
  readObject,
  readString,
  readTimestamp,
  type Fields,
} from "./parse-fields.js";

/** One message of a request: a Call ready for ingestion, or why it is not. */
export type ParsedMessage = { call: Call; problem?: undefined } | { call?: undefined; problem: FieldProblem };

/** A batch's top-level context and integrations, merged into each message, and its `sentAt`. */
export interface MessageDefaults {
  context?: JsonObject | undefined;
  integrations?: JsonObject | undefined;
  sentAt?: Date | undefined;
}

/**
 * Converts one flat JSON message (the tracking API's format) into a Call.
 * Only checks JSON types here; the rules shared with the RPC API (required
 * fields, lengths, depth, size) are applied by the Ingestor, so both APIs
 * accept and refuse exactly the same calls.
 *
 * Only the fields of the message's type are read, and `sentAt` (stored with
 * the call, outside its body). Everything else the SDKs send
 * (originalTimestamp, _metadata, channel, version, writeKey, a `properties`
 * on an identify...) is ignored, which is also what keeps a body's writeKey
 * out of everything delivered.
 *
 * @param pathType the type fixed by the endpoint (/v1/track), or undefined in
 * a batch, where each message's own `type` decides.
 */
export function parseMessage(raw: unknown, pathType: CallType | undefined, defaults: MessageDefaults = {}): ParsedMessage {
  try {
    if (!isPlainObject(raw)) throw new FieldProblem("message", "message must be a JSON object");
    const type = pathType ?? readType(raw);
    return { call: readCall(raw, type, defaults) };
  } catch (error) {
    if (error instanceof FieldProblem) return { problem: error };
    throw error;
  }
}

function readType(fields: Fields): CallType {
  const type = fields.type;
  if (type === undefined || type === null || type === "") {
    throw new FieldProblem("type", `type is required: one of ${callTypes.join(", ")}`);
  }
  if (!isCallType(type)) throw new FieldProblem("type", `type must be one of ${callTypes.join(", ")}`);
  return type;
}

function readCall(fields: Fields, type: CallType, defaults: MessageDefaults): Call {
  const call = emptyCall(type);
  call.messageId = readString(fields, "messageId");
  call.userId = readId(fields, "userId");
  call.timestamp = readTimestamp(fields, "timestamp");
  call.sentAt = readSentAt(fields) ?? defaults.sentAt;
  call.context = merge(defaults.context, readObject(fields, "context"));
  call.integrations = merge(defaults.integrations, readObject(fields, "integrations"));
  switch (type) {
    case "track":
      call.anonymousId = readId(fields, "anonymousId");
      call.event = readString(fields, "event");
      call.properties = readObject(fields, "properties");
      break;
    case "page":
      call.anonymousId = readId(fields, "anonymousId");
      call.name = readString(fields, "name");
      call.category = readString(fields, "category");
      call.properties = readObject(fields, "properties");
      break;
    case "screen":
      call.anonymousId = readId(fields, "anonymousId");
      call.name = readString(fields, "name");
      call.properties = readObject(fields, "properties");
      break;
    case "identify":
      call.anonymousId = readId(fields, "anonymousId");
      call.traits = readObject(fields, "traits");
      break;
    case "group":
      call.anonymousId = readId(fields, "anonymousId");
      call.groupId = readId(fields, "groupId");
      call.traits = readObject(fields, "traits");
      break;
    case "alias":
      // An alias body carries "Previous ID" and "User ID" only (see docs/webhooks.md#the-body).
      call.previousId = readId(fields, "previousId");
      break;
    default:
      unknownCallType(type);
  }
  return call;
}

/**
 * Shallow merge: a key the message sets replaces the batch's value for that
 * key whole. A deep merge would have to recurse into client-controlled
 * nesting before the depth check; a shallow one touches one level only.
 * Spread (not Object.assign) so that a "__proto__" key is copied as data.
 */
function merge(batchLevel: JsonObject | undefined, own: JsonObject | undefined): JsonObject | undefined {
  if (!batchLevel) return own;
  return { ...batchLevel, ...own };
}

/** What an endpoint takes: a batch envelope, or one flat message of a fixed type. */
export type Endpoint = { kind: "batch" } | { kind: "single"; type: CallType };

export interface ParsedRequest {
  /** The body's `writeKey`, used only when no Authorization header names one. */
  writeKey: string | undefined;
  /** One entry per message, in request order. */
  messages: ParsedMessage[];
}

/**
 * The body as JSON, whatever the Content-Type: rudder-sdk-node labels its
 * gzip JSON application/x-www-form-urlencoded and the browser library labels
 * its JSON text/plain. JSON.parse itself is iterative, so
 * deep nesting cannot overflow the stack here.
 */
export function parseJsonBody(body: Buffer): Fields {
  let text = body.toString("utf8");
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.trim() === "") throw new CompatError(400, "invalid_json", "request body is empty: send a JSON object");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CompatError(400, "invalid_json", `request body is not valid JSON: ${(error as Error).message.slice(0, 200)}`);
  }
  if (!isPlainObject(value)) throw new CompatError(400, "invalid_json", "request body must be a JSON object");
  return value;
}

/** Splits a parsed body into its messages; request-level problems throw a 400. */
export function parseRequest(endpoint: Endpoint, body: Fields): ParsedRequest {
  const writeKey = typeof body.writeKey === "string" && body.writeKey !== "" ? body.writeKey : undefined;
  if (endpoint.kind === "single") {
    return { writeKey, messages: [parseMessage(body, endpoint.type)] };
  }
  const batch = body.batch;
  if (batch === undefined || batch === null) {
    throw new CompatError(400, "invalid_request", 'batch is required: send {"batch":[{"type":"track",...}]}');
  }
  if (!Array.isArray(batch)) throw new CompatError(400, "invalid_request", "batch must be an array of messages");
  if (batch.length > limits.maxBatchMessages) throw tooManyMessages(batch.length);
  const defaults = readDefaults(body);
  return { writeKey, messages: batch.map((raw: unknown) => parseMessage(raw, undefined, defaults)) };
}

/**
 * The client's send time (`sentAt`, which the SDKs put on each message or on
 * the batch). Kept when it is an ISO 8601 date; anything else is ignored, as
 * it always was: it is the client's clock, and never a reason to refuse a call.
 */
function readSentAt(fields: Fields): Date | undefined {
  const value = fields.sentAt;
  const date = typeof value === "string" ? parseIsoTimestamp(value) : undefined;
  // Postgres's timestamptz has no year 0.
  return date && date.getUTCFullYear() >= 1 && date.getUTCFullYear() <= 9999 ? date : undefined;
}

/** A batch's own context and integrations; a wrong type fails the whole request. */
function readDefaults(body: Fields): MessageDefaults {
  try {
    return { context: readObject(body, "context"), integrations: readObject(body, "integrations"), sentAt: readSentAt(body) };
  } catch (error) {
    if (error instanceof FieldProblem) throw new CompatError(400, "invalid_request", error.reason);
    throw error;
  }
}

function tooManyMessages(count: number): CompatError {
  return new CompatError(
    400,
    "invalid_request",
    `batch has ${count} messages, over the limit of ${limits.maxBatchMessages} per request: send them in several batches`,
  );
}
