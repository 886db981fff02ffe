import { fromBinary, type JsonObject } from "@bufbuild/protobuf";
import { WireStructFieldSchema } from "../../gen/waypost/internal/v1/tracking_wire_pb.js";
import { callTypes, emptyCall, type Call, type CallType, type StructJson } from "../calls/call.js";
import { needsReferenceDecoding } from "./call-from-wire.js";
import { readEnd, readText, structJsonFromWire, type Reader } from "./struct-wire.js";

/**
 * Reads one batch entry (the encoding of a waypost.v1.Message) straight into
 * a Call, as callFromBatchMessage would give it for protobuf-es's decoding:
 * undefined for an entry without a call type. Like src/api/struct-wire.ts, it reads
 * only the ordinary encoding (one call field; known fields with their wire
 * types; valid UTF-8 without a leading byte-order mark; at most one
 * Timestamp with non-negative seconds and nanos), and answers
 * needsReferenceDecoding for anything else, for protobuf-es to decide.
 */
export function callFromWireEntry(bytes: Uint8Array): Call | undefined | typeof needsReferenceDecoding {
  if (bytes.byteLength === 0) return undefined;
  const r: Reader = { buf: bytes, pos: 1 };
  const tag = bytes[0]!;
  const type = callTypes[(tag >> 3) - 1];
  // One field, length-delimited, numbered 1 to 6 (the call types, in proto order); then nothing.
  if ((tag & 7) !== 2 || tag >= 0x80 || type === undefined || readEnd(r, bytes.byteLength) !== bytes.byteLength) {
    return needsReferenceDecoding;
  }
  return readCall(type, r, bytes.byteLength);
}

type Slot = "messageId" | "userId" | "anonymousId" | "previousId" | "event" | "name" | "category" | "groupId";
type FieldKind = Slot | "timestamp" | "context" | "integrations" | "properties" | "traits";

/** Each call message's fields by number (proto/waypost/v1/tracking.proto). */
const common: FieldKind[] = ["messageId", "userId", "anonymousId", "timestamp", "context", "integrations"];
const layouts: Record<CallType, ReadonlyArray<FieldKind | undefined>> = {
  identify: [undefined, ...common, "traits"],
  track: [undefined, ...common, "event", "properties"],
  page: [undefined, ...common, "name", "category", "properties"],
  screen: [undefined, ...common, "name", "properties"],
  group: [undefined, ...common, "groupId", "traits"],
  alias: [undefined, "messageId", "userId", "previousId", "timestamp", "context", "integrations"],
};

function readCall(type: CallType, r: Reader, end: number): Call | typeof needsReferenceDecoding {
  const call = emptyCall(type);
  const layout = layouts[type];
  const buf = r.buf;
  let context: Uint8Array[] | undefined;
  let object: Uint8Array[] | undefined;
  let integrations: Uint8Array[] | undefined;
  let timestampSeen = false;
  while (r.pos < end) {
    const tag = buf[r.pos++]!;
    const kind = tag < 0x80 && (tag & 7) === 2 ? layout[tag >> 3] : undefined;
    if (kind === undefined) return needsReferenceDecoding;
    const fieldEnd = readEnd(r, end);
    if (fieldEnd < 0) return needsReferenceDecoding;
    switch (kind) {
      case "context":
        (context ??= []).push(buf.subarray(r.pos, fieldEnd));
        break;
      case "properties":
      case "traits":
        (object ??= []).push(buf.subarray(r.pos, fieldEnd));
        break;
      case "integrations":
        (integrations ??= []).push(buf.subarray(r.pos, fieldEnd));
        break;
      case "timestamp": {
        // A second Timestamp would be merged into the first: left to protobuf-es.
        if (timestampSeen) return needsReferenceDecoding;
        timestampSeen = true;
        const ms = readTimestampMs(buf, r.pos, fieldEnd);
        if (ms === undefined) return needsReferenceDecoding;
        call.timestamp = new Date(ms);
        break;
      }
      default: {
        // A string field seen twice keeps the last, as in protobuf-es.
        const text = readText(buf, r.pos, fieldEnd);
        if (text === undefined) return needsReferenceDecoding;
        call[kind] = text;
      }
    }
    r.pos = fieldEnd;
  }
  const structJson: StructJson = {};
  if (context) {
    const json = structJsonFromWire(context);
    if (json === undefined) return needsReferenceDecoding;
    structJson.context = json;
  }
  if (object) {
    const json = structJsonFromWire(object);
    if (json === undefined) return needsReferenceDecoding;
    structJson[type === "identify" || type === "group" ? "traits" : "properties"] = json;
  }
  if (integrations) {
    const value = integrationsObject(integrations);
    if (value === undefined) return needsReferenceDecoding;
    call.integrations = value;
  }
  call.structJson = structJson;
  return call;
}

/**
 * Milliseconds of a Timestamp's encoding, as timestampDate computes them;
 * undefined unless it is seconds (field 1) and nanos (field 2), each at most
 * once, as non-negative varints small enough to be exact here.
 */
function readTimestampMs(buf: Uint8Array, start: number, end: number): number | undefined {
  let seconds = 0;
  let nanos = 0;
  let seen = 0;
  let pos = start;
  while (pos < end) {
    const tag = buf[pos++];
    const bit = tag === 0x08 ? 1 : tag === 0x10 ? 2 : 0;
    if (bit === 0 || seen & bit) return undefined;
    seen |= bit;
    // Up to 7 varint bytes (2^49): seconds to beyond year 9999, nanos to 2^31.
    let value = 0;
    let done = false;
    for (let i = 0, scale = 1; i < 7 && pos < end; i++, scale *= 128) {
      const byte = buf[pos++]!;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        done = true;
        break;
      }
    }
    if (!done) return undefined;
    if (bit === 1) seconds = value;
    else if (value > 0x7fffffff) return undefined;
    else nanos = value;
  }
  return seconds * 1000 + Math.round(nanos / 1000000);
}

/**
 * Integrations stay an object (they route the call): decoded by protobuf-es,
 * from their bytes alone, when they are ordinary (src/api/struct-wire.ts reads them
 * first), so its recursion limit cannot be met at a smaller depth here.
 */
function integrationsObject(occurrences: Uint8Array[]): JsonObject | undefined {
  if (structJsonFromWire(occurrences) === undefined) return undefined;
  const parts: number[] = [];
  for (const bytes of occurrences) {
    parts.push(0x0a);
    for (let len = bytes.byteLength; ; len >>>= 7) {
      if (len < 0x80) {
        parts.push(len);
        break;
      }
      parts.push((len & 0x7f) | 0x80);
    }
    for (const byte of bytes) parts.push(byte);
  }
  return fromBinary(WireStructFieldSchema, new Uint8Array(parts)).value;
}
