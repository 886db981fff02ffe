import { isUtf8 } from "node:buffer";

/**
 * Turns the protobuf encoding of a google.protobuf.Struct straight into the
 * JSON text that JSON.stringify gives for the object protobuf-es decodes from
 * it, without building Struct and Value messages first (the ingest hot path).
 *
 * It reads only what is ordinary: each map entry as key then value, each
 * Value with exactly one of its fields, valid UTF-8 without NUL or a leading
 * byte-order mark, nesting up to `maxNesting`, no "__proto__" key. For
 * anything else it answers undefined, and the caller decodes with
 * protobuf-es, whose outcome (an error, a validation problem, an odd but
 * valid encoding) is then the reference one. Because of that, the text it
 * does return needs no further checks: it holds no unstorable text and is
 * well within the depth limit.
 *
 * Keys go through a plain object, as in protobuf-es's map, so that the key
 * order (integer-like keys first) and duplicates (the last wins, in the first
 * one's place) come out the same.
 */
export function structJsonFromWire(occurrences: readonly Uint8Array[]): string | undefined {
  // A message field seen twice on the wire is merged: its bytes concatenated.
  const bytes = occurrences.length === 1 ? occurrences[0]! : Buffer.concat(occurrences);
  const reader: Reader = { buf: bytes, pos: 0 };
  const json = readStruct(reader, bytes.byteLength, 1);
  return json !== undefined && reader.pos === bytes.byteLength ? json : undefined;
}

/** JSON nesting read here; deeper input goes to protobuf-es (its recursion limit makes the answer there). */
export const maxNesting = 32;

export interface Reader {
  buf: Uint8Array;
  pos: number;
}

const utf8 = new TextDecoder();
// Doubles are little-endian on the wire; copied byte by byte into this scratch space.
const scratch = new Float64Array(1);
const scratchBytes = new Uint8Array(scratch.buffer);
const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

// Tags (field number << 3 | wire type) of the ordinary encoding, all one byte.
const entryTag = 0x0a; // Struct.fields (1, length-delimited); also MapEntry.key and ListValue.values
const entryValueTag = 0x12; // MapEntry.value (2, length-delimited)
const nullTag = 0x08; // Value.null_value (1, varint)
const numberTag = 0x11; // Value.number_value (2, 64-bit)
const stringTag = 0x1a; // Value.string_value (3, length-delimited)
const boolTag = 0x20; // Value.bool_value (4, varint)
const structTag = 0x2a; // Value.struct_value (5, length-delimited)
const listTag = 0x32; // Value.list_value (6, length-delimited)

function readStruct(r: Reader, end: number, depth: number): string | undefined {
  if (depth > maxNesting) return undefined;
  const fields: Record<string, string> = {};
  while (r.pos < end) {
    if (r.buf[r.pos++] !== entryTag) return undefined;
    const entryEnd = readEnd(r, end);
    if (entryEnd < 0 || r.buf[r.pos++] !== entryTag) return undefined;
    const key = readString(r, entryEnd);
    if (key === undefined || key === "__proto__" || r.buf[r.pos++] !== entryValueTag) return undefined;
    const quotedKey = quoted;
    const valueEnd = readEnd(r, entryEnd);
    if (valueEnd !== entryEnd) return undefined;
    const value = readValue(r, valueEnd, depth);
    if (value === undefined || r.pos !== valueEnd) return undefined;
    fields[key] = `${quotedKey}:${value}`;
  }
  if (r.pos !== end) return undefined;
  let out = "";
  for (const key in fields) out += out === "" ? fields[key] : `,${fields[key]}`;
  return `{${out}}`;
}

function readList(r: Reader, end: number, depth: number): string | undefined {
  if (depth > maxNesting) return undefined;
  let out = "[";
  let first = true;
  while (r.pos < end) {
    if (r.buf[r.pos++] !== entryTag) return undefined;
    const valueEnd = readEnd(r, end);
    if (valueEnd < 0) return undefined;
    const value = readValue(r, valueEnd, depth);
    if (value === undefined || r.pos !== valueEnd) return undefined;
    out += first ? value : `,${value}`;
    first = false;
  }
  return r.pos === end ? `${out}]` : undefined;
}

/** One Value with exactly one field set; `depth` is that of the container holding it. */
function readValue(r: Reader, end: number, depth: number): string | undefined {
  if (r.pos >= end) return undefined;
  const tag = r.buf[r.pos++];
  switch (tag) {
    case nullTag: {
      // Any enum number: protobuf-es maps the null_value case to null.
      const byte = r.buf[r.pos++]!;
      return byte < 0x80 && r.pos === end ? "null" : undefined;
    }
    case numberTag: {
      if (r.pos + 8 !== end) return undefined;
      const buf = r.buf;
      const at = r.pos;
      for (let i = 0; i < 8; i++) scratchBytes[littleEndian ? i : 7 - i] = buf[at + i]!;
      const n = scratch[0]!;
      r.pos += 8;
      // JSON.stringify writes NaN and ±Infinity (kept as numbers by protobuf-es) as null.
      return Number.isFinite(n) ? String(n) : "null";
    }
    case boolTag: {
      const byte = r.buf[r.pos++];
      return (byte === 0 || byte === 1) && r.pos === end ? (byte === 1 ? "true" : "false") : undefined;
    }
    case stringTag: {
      return readString(r, end) === undefined ? undefined : quoted;
    }
    case structTag: {
      const innerEnd = readEnd(r, end);
      return innerEnd === end ? readStruct(r, innerEnd, depth + 1) : undefined;
    }
    case listTag: {
      const innerEnd = readEnd(r, end);
      return innerEnd === end ? readList(r, innerEnd, depth + 1) : undefined;
    }
    default:
      return undefined;
  }
}

/** Reads a length (varint, at most 4 bytes: 256 MB) and answers where it ends; -1 when it is not ordinary or passes `limit`. */
export function readEnd(r: Reader, limit: number): number {
  const buf = r.buf;
  let len = 0;
  for (let shift = 0; shift < 28; shift += 7) {
    if (r.pos >= limit) return -1;
    const byte = buf[r.pos++]!;
    len |= (byte & 0x7f) << shift;
    if (byte < 0x80) {
      const end = r.pos + len;
      return end <= limit ? end : -1;
    }
  }
  return -1;
}

/** The JSON encoding of the text readText decoded last (JSON.stringify's). */
let quoted = "";
/** Whether the text readText decoded last holds NUL. */
let hadNul = false;

/** A length-delimited string without NUL; see readText. */
function readString(r: Reader, limit: number): string | undefined {
  const end = readEnd(r, limit);
  if (end < 0) return undefined;
  const text = readText(r.buf, r.pos, end);
  r.pos = end;
  return hadNul ? undefined : text;
}

/**
 * The UTF-8 text of buf[start, end) as protobuf-es decodes a proto3 string,
 * leaving its JSON encoding in `quoted` and whether it holds NUL in `hadNul`;
 * undefined when protobuf-es would refuse it (invalid UTF-8) or change it (a
 * leading byte-order mark is dropped by its decoder): those are left to it.
 */
export function readText(buf: Uint8Array, start: number, end: number): string | undefined {
  let ascii = true;
  // Quotes, backslashes and control characters are escaped by JSON.stringify; nothing else is
  // (valid UTF-8 holds no lone surrogates, the only other characters it escapes).
  let plain = true;
  let nul = false;
  let text = "";
  const short = end - start <= 64;
  for (let i = start; i < end; i++) {
    const byte = buf[i]!;
    if (byte >= 0x80) ascii = false;
    else if (byte < 0x20 || byte === 0x22 || byte === 0x5c) {
      plain = false;
      if (byte === 0) nul = true;
    }
    // Short ASCII text is cheapest built here; longer or other text is decoded below.
    if (ascii && short) text += String.fromCharCode(byte);
  }
  if (!ascii || !short) {
    const bytes = buf.subarray(start, end);
    if (!ascii) {
      if (end - start >= 3 && buf[start] === 0xef && buf[start + 1] === 0xbb && buf[start + 2] === 0xbf) return undefined;
      if (!isUtf8(bytes)) return undefined;
    }
    text = utf8.decode(bytes);
  }
  hadNul = nul;
  quoted = plain ? `"${text}"` : JSON.stringify(text);
  return text;
}
