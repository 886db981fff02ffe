import type { JsonObject } from "@bufbuild/protobuf";
import { typeFields, type Call } from "../calls/call.js";

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
  if (call.type === "alias") {
    text("Previous ID", call.previousId);
    text("User ID", call.userId);
  } else {
    text("userId", call.userId);
    // Each type's own fields, in the order of calls/call.ts's table (the documented one).
    for (const field of typeFields[call.type]) {
      if (field === "properties" || field === "traits") object(field, call[field]);
      else text(field, call[field]);
    }
  }
  out += `,"context":${raw?.context ?? JSON.stringify(call.context ?? {})}`;
  out += `,"timestamp":${JSON.stringify((call.timestamp ?? receivedAt).toISOString())}`;
  out += `,"messageId":${JSON.stringify(messageId)}`;
  if (call.type !== "alias") text("anonymousId", call.anonymousId);
  return `${out}}`;
}

/**
 * A text field read back from a stored body ("" when it has none): what the
 * API shows of a call that keeps no column for it. The body is parsed only
 * when the key is in it.
 */
export function payloadText(payload: string, key: "event" | "anonymousId"): string {
  if (!payload.includes(`"${key}"`)) return "";
  try {
    const value = (JSON.parse(payload) as Record<string, unknown>)[key];
    return typeof value === "string" ? value : "";
  } catch {
    return "";
  }
}

/** A delete notification: these three keys only. */
export function buildDeletePayload(userId: string, at: Date): string {
  return JSON.stringify({ type: "delete", userId, timestamp: at.toISOString() });
}
