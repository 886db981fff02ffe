import type { JsonObject } from "@bufbuild/protobuf";
import { callTypes, emptyCall, isCallType, typeFields, type Call, type CallType, type TypeField } from "../calls/call.js";
import { FieldProblem, isPlainObject, readId, readObject, readSentAt, readString, readTimestamp, type Fields } from "./json-fields.js";

/** One message: a Call ready for ingestion, or why it is not. */
export type ParsedMessage = { call: Call; problem?: undefined } | { call?: undefined; problem: FieldProblem };

/** A batch's top-level context and integrations, merged into each message, and its `sentAt`. */
export interface MessageDefaults {
  context?: JsonObject | undefined;
  integrations?: JsonObject | undefined;
  sentAt?: Date | undefined;
}

/**
 * Converts one flat JSON message (the tracking API's `/v1` format, which the
 * compatible HTTP API receives and a webhook source's transform returns) into
 * a Call. Only checks JSON types here; the rules shared with the RPC API
 * (required fields, lengths, depth, size) are applied by the Ingestor, so
 * every entry point accepts and refuses exactly the same calls.
 *
 * Only the fields of the message's type are read, and `sentAt` (stored with
 * the call, outside its body). Everything else the SDKs send
 * (originalTimestamp, _metadata, channel, version, writeKey, a `properties`
 * on an identify...) is ignored, which is also what keeps a body's writeKey
 * out of everything delivered.
 *
 * @param pathType the type fixed by the endpoint (/v1/track), or undefined
 * where each message's own `type` decides (a batch, a transform's result).
 */
export function callFromJson(raw: unknown, pathType?: CallType, defaults: MessageDefaults = {}): ParsedMessage {
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
  // An alias carries "Previous ID" and "User ID" only (see docs/webhooks.md#the-body).
  if (type !== "alias") call.anonymousId = readId(fields, "anonymousId");
  for (const field of typeFields[type]) readTypeField(call, fields, field);
  return call;
}

/** One of the fields only some types carry; ids take numbers too, as userId does. */
function readTypeField(call: Call, fields: Fields, field: TypeField): void {
  switch (field) {
    case "properties":
    case "traits":
      call[field] = readObject(fields, field);
      return;
    case "groupId":
    case "previousId":
      call[field] = readId(fields, field);
      return;
    case "event":
    case "name":
    case "category":
      call[field] = readString(fields, field);
      return;
    default:
      // A field added to TypeField does not compile until it is read here.
      field satisfies never;
  }
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
