import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Alias, Group, Identify, Message, Page, Screen, Track } from "../../gen/waypost/v1/tracking_pb.js";
import { emptyCall, type Call, type CallType } from "../calls/call.js";

type AnyCall = Identify | Track | Page | Screen | Group | Alias;

/** Converts one generated call message into the internal Call. */
export function callFromProto(type: CallType, message: AnyCall): Call {
  const call = emptyCall(type);
  call.messageId = message.messageId;
  call.userId = message.userId;
  call.timestamp = message.timestamp ? timestampDate(message.timestamp) : undefined;
  call.context = message.context;
  call.integrations = message.integrations;
  if ("anonymousId" in message) call.anonymousId = message.anonymousId;
  if ("previousId" in message) call.previousId = message.previousId;
  if ("event" in message) call.event = message.event;
  if ("name" in message) call.name = message.name;
  if ("category" in message) call.category = message.category;
  if ("groupId" in message) call.groupId = message.groupId;
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
