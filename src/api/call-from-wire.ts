import { timestampDate } from "@bufbuild/protobuf/wkt";
import type {
  WireAlias,
  WireGroup,
  WireIdentify,
  WirePage,
  WireScreen,
  WireTrack,
} from "../../gen/waypost/internal/v1/tracking_wire_pb.js";
import { emptyCall, type Call, type CallType, type StructJson } from "../calls/call.js";
import { structJsonFromWire } from "./struct-wire.js";

type AnyWireCall = WireIdentify | WireTrack | WirePage | WireScreen | WireGroup | WireAlias;

/** Marks a call whose Struct bytes this reader leaves to protobuf-es (see src/api/struct-wire.ts). */
export const needsReferenceDecoding = Symbol("needs reference decoding");

/**
 * Converts one call decoded with the wire-compatible messages into the
 * internal Call, like callFromProto; its Struct fields become JSON text.
 */
export function callFromWire(type: CallType, message: AnyWireCall): Call | typeof needsReferenceDecoding {
  const call = emptyCall(type);
  const structJson: StructJson = {};
  call.messageId = message.messageId;
  call.userId = message.userId;
  call.timestamp = message.timestamp ? timestampDate(message.timestamp) : undefined;
  call.integrations = message.integrations;
  if (!readInto(structJson, "context", message.context)) return needsReferenceDecoding;
  if ("anonymousId" in message) call.anonymousId = message.anonymousId;
  if ("previousId" in message) call.previousId = message.previousId;
  if ("event" in message) call.event = message.event;
  if ("name" in message) call.name = message.name;
  if ("category" in message) call.category = message.category;
  if ("groupId" in message) call.groupId = message.groupId;
  if ("properties" in message && !readInto(structJson, "properties", message.properties)) return needsReferenceDecoding;
  if ("traits" in message && !readInto(structJson, "traits", message.traits)) return needsReferenceDecoding;
  call.structJson = structJson;
  return call;
}

function readInto(target: StructJson, key: keyof StructJson, occurrences: Uint8Array[]): boolean {
  if (occurrences.length === 0) return true;
  const json = structJsonFromWire(occurrences);
  if (json === undefined) return false;
  target[key] = json;
  return true;
}
