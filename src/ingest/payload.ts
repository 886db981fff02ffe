import type { JsonObject } from "@bufbuild/protobuf";
import type { Call } from "./call.js";

/**
 * The JSON body sent to webhooks (see docs/webhooks.md#the-body), serialised once. Keys are
 * inserted in the order that page gives; absent values are left out, context
 * is always there. The string is stored and later signed and sent byte for
 * byte.
 */
export function buildCallPayload(call: Call, messageId: string, receivedAt: Date): string {
  const body: Record<string, unknown> = { version: 1, type: call.type };
  const set = (key: string, value: string | JsonObject | undefined) => {
    if (value !== undefined && value !== "") body[key] = value;
  };
  switch (call.type) {
    case "track":
      set("userId", call.userId);
      set("event", call.event);
      set("properties", call.properties);
      break;
    case "page":
      set("userId", call.userId);
      set("name", call.name);
      set("category", call.category);
      set("properties", call.properties);
      break;
    case "screen":
      set("userId", call.userId);
      set("name", call.name);
      set("properties", call.properties);
      break;
    case "identify":
      set("userId", call.userId);
      set("traits", call.traits);
      break;
    case "group":
      set("userId", call.userId);
      set("groupId", call.groupId);
      set("traits", call.traits);
      break;
    case "alias":
      set("Previous ID", call.previousId);
      set("User ID", call.userId);
      break;
  }
  body.context = call.context ?? {};
  body.timestamp = (call.timestamp ?? receivedAt).toISOString();
  body.messageId = messageId;
  if (call.type !== "alias") set("anonymousId", call.anonymousId);
  return JSON.stringify(body);
}

/** A delete notification: these three keys only. */
export function buildDeletePayload(userId: string, at: Date): string {
  return JSON.stringify({ type: "delete", userId, timestamp: at.toISOString() });
}
