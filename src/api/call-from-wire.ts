import type {
  WireAlias,
  WireGroup,
  WireIdentify,
  WirePage,
  WireScreen,
  WireTrack,
} from "../../gen/waypost/internal/v1/tracking_wire_pb.js";
import type { Call, CallType, StructJson } from "../calls/call.js";
import { callWithScalars } from "./call-from-proto.js";
import { structJsonFromWire } from "./struct-wire.js";

type AnyWireCall = WireIdentify | WireTrack | WirePage | WireScreen | WireGroup | WireAlias;

/** Marks a call whose Struct bytes this reader leaves to protobuf-es (see src/api/struct-wire.ts). */
export const needsReferenceDecoding = Symbol("needs reference decoding");

/**
 * Converts one call decoded with the wire-compatible messages into the
 * internal Call, like callFromProto; its Struct fields become JSON text.
 */
export function callFromWire(type: CallType, message: AnyWireCall): Call | typeof needsReferenceDecoding {
  const structJson: StructJson = {};
  if (!readInto(structJson, "context", message.context)) return needsReferenceDecoding;
  const call = callWithScalars(type, message);
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
