import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import type { CollectedSpan } from "./otlp-collector.js";

// A reader of OTLP's ExportTraceServiceRequest in protobuf, for the fields
// the tests look at (opentelemetry/proto/trace/v1/trace.proto numbers).

type Value = string | number | boolean;

/** Each length-delimited or varint field of a message: [field number, reader of its bytes or its number]. */
function* fields(bytes: Uint8Array): Generator<[number, Uint8Array | bigint | number]> {
  const reader = new BinaryReader(bytes);
  while (reader.pos < reader.len) {
    const [no, type] = reader.tag();
    if (type === WireType.LengthDelimited) yield [no, reader.bytes()];
    else if (type === WireType.Varint) yield [no, reader.uint64() as bigint];
    else if (type === WireType.Bit64) yield [no, reader.double()];
    else reader.skip(type);
  }
}

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");

function anyValue(bytes: Uint8Array): Value | undefined {
  for (const [no, v] of fields(bytes)) {
    if (no === 1 && v instanceof Uint8Array) return text(v);
    if (no === 2 && typeof v === "bigint") return v !== 0n;
    if (no === 3 && typeof v === "bigint") return Number(v);
    if (no === 4 && typeof v === "number") return v;
  }
  return undefined;
}

function keyValue(bytes: Uint8Array): [string, Value | undefined] {
  let key = "";
  let value: Value | undefined;
  for (const [no, v] of fields(bytes)) {
    if (no === 1 && v instanceof Uint8Array) key = text(v);
    if (no === 2 && v instanceof Uint8Array) value = anyValue(v);
  }
  return [key, value];
}

function attributesOf(bytes: Uint8Array, field: number): Record<string, Value> {
  const out: Record<string, Value> = {};
  for (const [no, v] of fields(bytes)) {
    if (no !== field || !(v instanceof Uint8Array)) continue;
    const [key, value] = keyValue(v);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

function span(bytes: Uint8Array, serviceName: string): CollectedSpan {
  const s: CollectedSpan = { traceId: "", spanId: "", parentSpanId: "", name: "", kind: 0, attributes: {}, statusCode: 0, serviceName };
  for (const [no, v] of fields(bytes)) {
    if (v instanceof Uint8Array) {
      if (no === 1) s.traceId = hex(v);
      else if (no === 2) s.spanId = hex(v);
      else if (no === 4) s.parentSpanId = hex(v);
      else if (no === 5) s.name = text(v);
      else if (no === 15) for (const [sn, sv] of fields(v)) if (sn === 3 && typeof sv === "bigint") s.statusCode = Number(sv);
    } else if (no === 6) s.kind = Number(v);
  }
  s.attributes = attributesOf(bytes, 9);
  return s;
}

/** The spans of an ExportTraceServiceRequest. */
export function decodeProtobufExport(body: Uint8Array): CollectedSpan[] {
  const spans: CollectedSpan[] = [];
  for (const [no, resourceSpans] of fields(body)) {
    if (no !== 1 || !(resourceSpans instanceof Uint8Array)) continue;
    let serviceName = "";
    for (const [rn, rv] of fields(resourceSpans)) {
      if (rn === 1 && rv instanceof Uint8Array) serviceName = String(attributesOf(rv, 1)["service.name"] ?? "");
    }
    for (const [rn, scopeSpans] of fields(resourceSpans)) {
      if (rn !== 2 || !(scopeSpans instanceof Uint8Array)) continue;
      for (const [sn, sv] of fields(scopeSpans)) if (sn === 2 && sv instanceof Uint8Array) spans.push(span(sv, serviceName));
    }
  }
  return spans;
}
