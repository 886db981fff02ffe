import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createConnectRouter, type ConnectRouterOptions, type ConnectRouter } from "@connectrpc/connect";
import {
  compressionBrotli,
  compressionGzip,
  type connectNodeAdapter,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import type { Compression, UniversalServerRequest } from "@connectrpc/connect/protocol";
import { RequestTooLargeSchema } from "../../gen/waypost/v1/tracking_pb.js";

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

export interface SizeLimitedAdapterOptions extends Omit<ConnectRouterOptions, "readMaxBytes"> {
  /** The largest request body, counted raw and after decompression. */
  maxRequestBytes: number;
  routes(router: ConnectRouter): void;
}

type NodeHandler = ReturnType<typeof connectNodeAdapter>;

/**
 * `connectNodeAdapter`, except that a request over `maxRequestBytes` fails
 * with `requestTooLarge` rather than Connect's own error, which carries no
 * detail (Connect reads the body before any interceptor runs, so this cannot
 * be an interceptor). The body is counted as it streams in, and a declared
 * Content-Length over the limit is refused before a byte is read; a
 * compressed body is refused when it inflates past the limit. Connect's own
 * limit stays in place as the backstop (gRPC's envelopes reach it first).
 */
export function createSizeLimitedAdapter(options: SizeLimitedAdapterOptions): NodeHandler {
  const limit = options.maxRequestBytes;
  const acceptCompression = (options.acceptCompression ?? [compressionGzip, compressionBrotli]).map((c) =>
    limitedDecompression(c, limit),
  );
  const router = createConnectRouter({ ...options, acceptCompression, readMaxBytes: limit });
  options.routes(router);
  const paths = new Map(router.handlers.map((handler) => [handler.requestPath, handler]));

  return function sizeLimitedHandler(req, res) {
    const handler = paths.get((req.url ?? "").split("?", 2)[0] ?? "");
    if (!handler) {
      res.writeHead(404);
      res.end();
      return;
    }
    const uReq = limitBody(universalRequestFromNodeRequest(req, res, undefined, undefined), limit);
    handler(uReq)
      .then((uRes) => universalResponseToNodeResponse(uRes, res))
      .catch((reason: unknown) => {
        // The client went away mid-request: nothing to answer.
        if (ConnectError.from(reason).code === Code.Aborted) return;
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
  };
}

/**
 * The request with a counting body. Its Content-Length is taken out of the
 * headers Connect sees: Connect would refuse an oversized one itself, without
 * the detail; the count below does it instead.
 */
function limitBody(uReq: UniversalServerRequest, limit: number): UniversalServerRequest {
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
function limitedDecompression(compression: Compression, limit: number): Compression {
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
