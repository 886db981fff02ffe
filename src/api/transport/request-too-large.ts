import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Compression, UniversalServerRequest } from "@connectrpc/connect/protocol";
import { RequestTooLargeSchema } from "../../../gen/waypost/v1/tracking_pb.js";

/**
 * The error for a request over the size limit: `resource_exhausted` with a
 * `waypost.v1.RequestTooLarge` detail. Clients tell it from a rate limit (the
 * same code) by the detail, and split the batch instead of retrying it.
 */
export function requestTooLarge(limitBytes: number, cause?: unknown): ConnectError {
  return new ConnectError(
    `request body is over the limit of ${limitBytes} bytes: send fewer calls per request`,
    Code.ResourceExhausted,
    undefined,
    [{ desc: RequestTooLargeSchema, value: create(RequestTooLargeSchema, { limitBytes: BigInt(limitBytes) }) }],
    cause,
  );
}

/**
 * The request with a counting body. Its Content-Length is taken out of the
 * headers Connect sees: Connect would refuse an oversized one itself, without
 * the detail; the count below does it instead.
 */
export function limitBody(uReq: UniversalServerRequest, limit: number): UniversalServerRequest {
  const declared = Number(uReq.header.get("content-length") ?? NaN);
  const body = uReq.body;
  if (typeof body !== "object" || body === null || !(Symbol.asyncIterator in body)) return uReq;
  const header = new Headers(uReq.header);
  header.delete("content-length");
  const source = body as AsyncIterable<Uint8Array>;
  async function* counted(): AsyncGenerator<Uint8Array> {
    // Never started on the body, so Node discards it after the answer.
    if (declared > limit) throw requestTooLarge(limit);
    let bytes = 0;
    for await (const chunk of source) {
      bytes += chunk.byteLength;
      // Past the limit the rest is read and dropped, so that a client still
      // uploading reads the answer rather than a connection reset; past
      // maxDiscardBytes the connection is cut (leaving the loop destroys it).
      if (bytes > maxDiscardBytes(limit)) break;
      if (bytes <= limit) yield chunk;
    }
    if (bytes > limit) throw requestTooLarge(limit);
  }
  return { ...uReq, header, body: counted() };
}

/** How much of an oversized body is read and dropped before the connection is cut. */
const maxDiscardBytes = (limit: number) => 16 * limit;

/** Decompression whose "too large" is `requestTooLarge`. */
export function limitedDecompression(compression: Compression, limit: number): Compression {
  return {
    name: compression.name,
    compress: (bytes) => compression.compress(bytes),
    async decompress(bytes, readMaxBytes) {
      try {
        return await compression.decompress(bytes, readMaxBytes);
      } catch (error) {
        if (error instanceof ConnectError && error.code === Code.ResourceExhausted) throw requestTooLarge(limit, error);
        throw error;
      }
    },
  };
}
