import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { BatchRequestSchema, type BatchRequest, type MessageSchema } from "../../../gen/waypost/v1/tracking_pb.js";
import type { CallQueue, QueuedCall } from "./queue.js";

/** The server refuses a request over 500 KB whole. */
export const maxRequestBytes = 500 * 1024;

/**
 * What the client aims to stay under. The estimate below is the exact size
 * of the Connect JSON body or more (protobuf-es writes timestamps shorter and
 * everything else the same), so 20 KB of margin is for injected transports
 * that encode differently; a request refused for its size is still split in
 * two and resent (see retry.ts).
 */
export const defaultMaxBatchBytes = 480 * 1024;

/** `{"batch":[` and `]}`. */
const requestOverheadBytes = 12;

/** Bytes one call adds to a request: `{"track":` + json + `},`. */
export function callRequestBytes(call: QueuedCall): number {
  return call.bytes + call.type.length + 6;
}

/**
 * Takes calls from the head of the queue for one request: at most `maxCount`,
 * and no more than `maxBytes` of request body, but always at least one (a
 * single call is at most 32 KB, far below the limit).
 */
export function takeBatch(queue: CallQueue, maxCount: number, maxBytes: number): QueuedCall[] {
  const batch: QueuedCall[] = [];
  let bytes = requestOverheadBytes;
  while (batch.length < maxCount) {
    const next = queue.peek();
    if (next === undefined) break;
    const size = callRequestBytes(next);
    if (batch.length > 0 && bytes + size > maxBytes) break;
    batch.push(queue.shift()!);
    bytes += size;
  }
  return batch;
}

/** Size estimate of the request that carries these calls. */
export function batchRequestBytes(calls: readonly QueuedCall[]): number {
  let bytes = requestOverheadBytes;
  for (const call of calls) bytes += callRequestBytes(call);
  return bytes;
}

/** Splits calls into two halves, for a request the server found too large. */
export function halve<T>(calls: readonly T[]): [T[], T[]] {
  const middle = Math.ceil(calls.length / 2);
  return [calls.slice(0, middle), calls.slice(middle)];
}

export interface EncodedBatch {
  request: BatchRequest;
  /** The calls in the request, in the order of `request.batch`. */
  sent: QueuedCall[];
  /** Calls that could not be turned into protobuf messages. */
  unencodable: Array<{ call: QueuedCall; error: Error }>;
}

/**
 * Builds the BatchRequest from the JSON each call was encoded to when it was
 * made (parsing it is the snapshot: later changes to the caller's objects do
 * not leak in). The parsed objects go into the message as they are, Struct
 * fields being plain JSON objects in protobuf-es; only the timestamp needs
 * converting. (`fromJsonString` would do the same work three times slower,
 * checking for duplicate keys that `JSON.stringify` cannot produce.) A call
 * that fails to convert is set aside, so it cannot sink the others.
 */
export function encodeBatch(calls: readonly QueuedCall[]): EncodedBatch {
  const sent: QueuedCall[] = [];
  const messages: MessageInitShape<typeof MessageSchema>[] = [];
  const unencodable: EncodedBatch["unencodable"] = [];
  for (const call of calls) {
    try {
      messages.push(messageOf(call));
      sent.push(call);
    } catch (error) {
      unencodable.push({ call, error: error instanceof Error ? error : new Error(String(error)) });
    }
  }
  return { request: create(BatchRequestSchema, { batch: messages }), sent, unencodable };
}

function messageOf(call: QueuedCall): MessageInitShape<typeof MessageSchema> {
  const value = JSON.parse(call.json) as Record<string, unknown>;
  if (typeof value.timestamp === "string") {
    const ms = Date.parse(value.timestamp);
    if (Number.isNaN(ms)) throw new Error(`timestamp ${JSON.stringify(value.timestamp)} is not a date`);
    value.timestamp = timestampFromMs(ms);
  }
  return { type: { case: call.type, value } } as MessageInitShape<typeof MessageSchema>;
}
