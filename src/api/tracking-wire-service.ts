import { fromBinary, toBinary, type DescMessage, type DescMethodUnary, type MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import {
  WireAliasRequestSchema,
  WireBatchRequestSchema,
  WireGroupRequestSchema,
  WireIdentifyRequestSchema,
  WirePageRequestSchema,
  WireScreenRequestSchema,
  WireTrackRequestSchema,
  type WireBatchRequest,
} from "../../gen/waypost/internal/v1/tracking_wire_pb.js";
import { BatchRequestSchema, TrackingService } from "../../gen/waypost/v1/tracking_pb.js";
import type { Call, CallType } from "../calls/call.js";
import { callFromBatchMessage, callFromProto } from "./call-from-proto.js";
import { callFromWireEntry } from "./call-wire.js";
import { callFromWire, needsReferenceDecoding } from "./call-from-wire.js";
import type { Ingestor } from "../ingest/ingestor.js";
import { ingestBatch, ingestOne } from "./tracking-service.js";

/**
 * TrackingService for binary (protobuf) requests: the same methods, paths
 * and answers, but the requests are decoded with the wire-compatible
 * messages of proto/waypost/internal/v1, so that context, properties and
 * traits go from their wire bytes to stored JSON text without Struct and
 * Value messages (src/api/struct-wire.ts), and a Batch's entries from
 * their bytes to calls without message objects at all (call-wire.ts). A request with a Struct that
 * reader leaves alone is decoded again, whole, with the public messages and
 * takes the ordinary path, errors included.
 */
export function registerWireTrackingService(router: ConnectRouter, ingestor: Ingestor): void {
  const unary = (type: CallType, input: DescMessage) => {
    router.rpc(wireMethod(type, input), (req, ctx) => ingestOne(ingestor, type, callOfWireRequest(type, input, req), ctx));
  };
  router.rpc(wireMethod("batch", WireBatchRequestSchema), (req, ctx) => ingestBatch(ingestor, callsOfWireBatch(req), ctx));
  unary("identify", WireIdentifyRequestSchema);
  unary("track", WireTrackRequestSchema);
  unary("page", WirePageRequestSchema);
  unary("screen", WireScreenRequestSchema);
  unary("group", WireGroupRequestSchema);
  unary("alias", WireAliasRequestSchema);
}

/** A Batch request's calls (undefined for an entry without a call type), as the public path would give them. */
export function callsOfWireBatch(req: WireBatchRequest): Array<Call | undefined> {
  const calls: Array<Call | undefined> = [];
  for (const message of req.batch) {
    const call = callFromWireEntry(message);
    if (call === needsReferenceDecoding) {
      return referenceDecode(BatchRequestSchema, WireBatchRequestSchema, req).batch.map(callFromBatchMessage);
    }
    calls.push(call);
  }
  return calls;
}

/** The call of a unary request (`input` is its wire-compatible message), undefined when it carries none. */
export function callOfWireRequest(type: CallType, input: DescMessage, req: Record<string, unknown>): Call | undefined {
  const message = req[type] as Parameters<typeof callFromWire>[1] | undefined;
  if (!message) return undefined;
  const call = callFromWire(type, message);
  if (call !== needsReferenceDecoding) return call;
  const reference = referenceDecode(TrackingService.method[type].input, input, req) as Record<string, unknown>;
  return callFromProto(type, reference[type] as Parameters<typeof callFromProto>[1]);
}

/**
 * The public method with the wire-compatible input: same service, name, path
 * and answer. (The assertion says what the spread does: the input schema is
 * replaced, so requests decode as `I`.)
 */
function wireMethod<K extends keyof typeof TrackingService.method, I extends DescMessage>(
  localName: K,
  input: I,
): DescMethodUnary<I, (typeof TrackingService.method)[K]["output"]> {
  return { ...TrackingService.method[localName], input } as DescMethodUnary<I, (typeof TrackingService.method)[K]["output"]>;
}

/**
 * The request as protobuf-es decodes it with the public messages. Encoding
 * the wire message again keeps every Struct's bytes (each occurrence, in
 * order) and unknown fields, so the outcome is the one the original body
 * gives; a decoding error is answered as Connect answers one (the `internal`
 * it reports is turned into this `invalid_argument` for every protocol).
 */
function referenceDecode<P extends DescMessage, W extends DescMessage>(publicSchema: P, wireSchema: W, request: unknown): MessageShape<P> {
  try {
    return fromBinary(publicSchema, toBinary(wireSchema, request as MessageShape<W>));
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new ConnectError(`parse binary: ${message}`, Code.InvalidArgument);
  }
}
