import type { JsonObject } from "@bufbuild/protobuf";
import { unknownCallType, type Call } from "../calls/call.js";

/**
 * The JSON body sent to webhooks (see docs/webhooks.md#the-body), serialised once. Keys are
 * written in the order that page gives; absent values are left out, context
 * is always there. The string is stored and later signed and sent byte for
 * byte. It is written piece by piece, exactly as JSON.stringify writes the
 * object of those keys, so that JSON text read from the wire
 * (call.structJson) goes in as it is.
 */
export function buildCallPayload(call: Call, messageId: string, receivedAt: Date): string {
  const raw = call.structJson;
  let out = `{"version":1,"type":${JSON.stringify(call.type)}`;
  const text = (key: string, value: string) => {
    if (value !== "") out += `,${JSON.stringify(key)}:${JSON.stringify(value)}`;
  };
  const object = (key: "properties" | "traits", value: JsonObject | undefined) => {
    const json = raw?.[key] ?? (value === undefined ? undefined : JSON.stringify(value));
    if (json !== undefined) out += `,"${key}":${json}`;
  };
  switch (call.type) {
    case "track":
      text("userId", call.userId);
      text("event", call.event);
      object("properties", call.properties);
      break;
    case "page":
      text("userId", call.userId);
      text("name", call.name);
      text("category", call.category);
      object("properties", call.properties);
      break;
    case "screen":
      text("userId", call.userId);
      text("name", call.name);
      object("properties", call.properties);
      break;
    case "identify":
      text("userId", call.userId);
      object("traits", call.traits);
      break;
    case "group":
      text("userId", call.userId);
      text("groupId", call.groupId);
      object("traits", call.traits);
      break;
    case "alias":
      text("Previous ID", call.previousId);
      text("User ID", call.userId);
      break;
    default:
      unknownCallType(call.type);
  }
  out += `,"context":${raw?.context ?? JSON.stringify(call.context ?? {})}`;
  out += `,"timestamp":${JSON.stringify((call.timestamp ?? receivedAt).toISOString())}`;
  out += `,"messageId":${JSON.stringify(messageId)}`;
  if (call.type !== "alias") text("anonymousId", call.anonymousId);
  return `${out}}`;
}

/** A delete notification: these three keys only. */
export function buildDeletePayload(userId: string, at: Date): string {
  return JSON.stringify({ type: "delete", userId, timestamp: at.toISOString() });
}
