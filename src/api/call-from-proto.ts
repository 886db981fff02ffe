import type { JsonObject } from "@bufbuild/protobuf";
import { type Timestamp, timestampDate } from "@bufbuild/protobuf/wkt";
import type { Alias, Group, Identify, Message, Page, Screen, Track } from "../../gen/waypost/v1/tracking_pb.js";
import { emptyCall, type Call, type CallType } from "../calls/call.js";

type AnyCall = Identify | Track | Page | Screen | Group | Alias;

/** The text fields a call message may carry, each only on the types that have it. */
const textFields = ["anonymousId", "previousId", "event", "name", "category", "groupId"] as const;

/** What a call message and its wire twin (call-from-wire.ts) carry alike: all but context, properties and traits. */
export type CallScalars = {
  messageId: string;
  userId: string;
  timestamp?: Timestamp | undefined;
  integrations?: JsonObject | undefined;
} & Partial<Record<(typeof textFields)[number], string>>;

/** A Call with a message's fields but its Structs, which each reader reads its own way. */
export function callWithScalars(type: CallType, message: CallScalars): Call {
  const call = emptyCall(type);
  call.messageId = message.messageId;
  call.userId = message.userId;
  call.timestamp = message.timestamp ? timestampDate(message.timestamp) : undefined;
  call.integrations = message.integrations;
  for (const field of textFields) call[field] = message[field] ?? "";
  return call;
}

/** Converts one generated call message into the internal Call. */
export function callFromProto(type: CallType, message: AnyCall): Call {
  const call = callWithScalars(type, message);
  call.context = message.context;
  if ("properties" in message) call.properties = message.properties;
  if ("traits" in message) call.traits = message.traits;
  return call;
}

/** A batch entry; undefined when its oneof is empty. */
export function callFromBatchMessage(message: Message): Call | undefined {
  const entry = message.type;
  if (entry.case === undefined) return undefined;
  return callFromProto(entry.case, entry.value);
}
