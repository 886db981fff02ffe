import {
  Code,
  ConnectError,
  createConnectRouter,
  type ConnectRouter,
  type ConnectRouterOptions,
  type ContextValues,
} from "@connectrpc/connect";
import type { Compression, UniversalServerRequest } from "@connectrpc/connect/protocol";
import {
  compressionBrotli,
  compressionGzip,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import type { DescService } from "@bufbuild/protobuf";
import type { IngestAdmission } from "../../http/ingest-admission.js";
import type { BodyTiming } from "../../http/request-body.js";
import { closeUnreadRequest, finishUnreadRequest } from "../../http/unread-body.js";
import type { Logger } from "../../logger.js";
import { guardBody, guardDecompression } from "./batch-count-guard.js";
import { closesConnection, readUnaryBody } from "./read-rpc-body.js";
import { limitBody, limitedDecompression } from "./request-too-large.js";
import { reclassifyClientFaults } from "./rpc-client-faults.js";
import { rpcProtocolOf, writeEarlyRpcError } from "./rpc-early-error.js";
import type { Req, Res } from "../../http/types.js";

export type RpcNodeHandler = (req: Req, res: Res) => void;

export interface RpcAdapterOptions extends ConnectRouterOptions {
  routes(router: ConnectRouter): void;
  /**
   * Routes that replace those of `routes` for requests in binary protobuf
   * (Connect, gRPC, gRPC-Web): the same methods and paths, with request
   * messages that are wire-compatible with the public ones. JSON requests
   * always take `routes`.
   */
  binaryRoutes?(router: ConnectRouter): void;
  /**
   * Checks the credentials of a request from its headers alone, before a byte
   * of its body is read or inflated: resolves to the context values for the
   * call, or to the error to answer with.
   */
  gate(req: Req, service: DescService, method: string): Promise<ContextValues | ConnectError>;
  logger: Logger;
  /** Counts batch messages before decoding and refuses a request with more (TrackingService). */
  maxBatchMessages?: number;
  /**
   * Refuses a body over this many bytes (raw or inflated) with a
   * RequestTooLarge detail, so clients split the batch rather than retry it
   * (TrackingService). Connect's own readMaxBytes error carries no detail.
   */
  maxRequestBytes?: number;
  /**
   * With maxRequestBytes: unary bodies are read whole before Connect sees
   * them, with this deadline and minimum rate and a bounded number of
   * pieces (read-rpc-body.ts).
   */
  bodies?: BodyTiming;
  /** Turns for the work of requests whose bodies are in (TrackingService): http/ingest-admission.ts. */
  admission?: IngestAdmission | undefined;
}

/**
 * Connect's Node adapter, with three changes: credentials are checked before
 * the body is read (Connect's interceptors run only after the request
 * message was decoded, so an unauthenticated caller could make the server
 * inflate a large body); request bodies that cannot be decoded are answered
 * `invalid_argument`, not `internal`; and an HTTP/2 stream whose body was
 * not read to its end is reset once answered, so the client stops sending.
 */
export function createRpcAdapter(options: RpcAdapterOptions): RpcNodeHandler {
  const limit = options.maxBatchMessages;
  const maxBytes = options.maxRequestBytes;
  const compressions = (options.acceptCompression ?? [compressionGzip, compressionBrotli]).map((compression) => {
    let checked = clientFaultDecompression(compression);
    if (maxBytes !== undefined) checked = limitedDecompression(checked, maxBytes);
    return limit === undefined ? checked : guardDecompression(checked, limit);
  });
  const routerOptions = { ...options, acceptCompression: compressions };
  const router = createConnectRouter(routerOptions);
  options.routes(router);
  const handlers = new Map(router.handlers.map((handler) => [handler.requestPath, handler]));
  const binaryRouter = createConnectRouter(routerOptions);
  options.binaryRoutes?.(binaryRouter);
  const binaryHandlers = new Map(binaryRouter.handlers.map((handler) => [handler.requestPath, handler]));
  return (req, res) => {
    const path = (req.url ?? "").split("?", 1)[0]!;
    const handler = (binaryHandlers.size > 0 && isBinaryProtobuf(req) && binaryHandlers.get(path)) || handlers.get(path);
    if (!handler) {
      res.writeHead(404);
      res.end();
      return;
    }
    void (async () => {
      finishUnreadRequest(req, res);
      const gate = await options.gate(req, handler.service, handler.method.name);
      if (gate instanceof ConnectError) return writeEarlyRpcError(req, res, gate);
      await serve(req, res, handler, gate);
    })().catch((reason: unknown) => {
      if (ConnectError.from(reason).code === Code.Aborted) return;
      options.logger.error({ err: reason, rpc: `${handler.service.typeName}/${handler.method.name}` }, "rpc failed");
      if (!res.headersSent) {
        writeEarlyRpcError(req, res, new ConnectError("internal error", Code.Internal));
      } else {
        res.destroy();
      }
    });
  };

  /** Reads the body (bounded), runs the handler and writes its answer. */
  async function serve(req: Req, res: Res, handler: (typeof router.handlers)[number], gate: ContextValues): Promise<void> {
    let raw = universalRequestFromNodeRequest(req, res, undefined, gate);
    // Connect's unary protocol only: enveloped ones (gRPC, gRPC-Web) are refused by their envelope's declared length.
    if (maxBytes !== undefined && options.bodies && rpcProtocolOf(req) === "connect-unary") {
      try {
        raw = await readUnaryBody(req, raw, { maxBytes, timing: options.bodies });
      } catch (error) {
        if (error instanceof ConnectError) return refuseBody(req, res, error);
        throw error;
      }
    }
    const request = maxBytes === undefined ? raw : limitBody(raw, maxBytes);
    // A turn once the body is in (a slow sender holds no turn), for the decoding and storing.
    const leave = await options.admission?.enter();
    if (leave) {
      // Ended when the answer is out or the connection gone: Connect's
      // universalResponseToNodeResponse waits for an "end" event that a
      // ServerResponse never emits, so its promise never settles.
      res.once("finish", leave);
      res.once("close", leave);
    }
    const response = await handler(limit === undefined ? request : withBatchGuard(req, request, limit));
    await universalResponseToNodeResponse(await reclassifyClientFaults(response, rpcProtocolOf(req)), res);
  }
}

/** Answers a body refused while read; a client gone (aborted) gets nothing. */
function refuseBody(req: Req, res: Res, error: ConnectError): void {
  if (error.code === Code.Aborted) return;
  writeEarlyRpcError(req, res, error);
  if (closesConnection(error)) closeUnreadRequest(req, res);
}

/**
 * Binary protobuf content types: application/proto, application/connect+proto,
 * application/grpc(+proto), application/grpc-web(+proto). Anything else
 * (JSON, gRPC-Web text, unknown types) takes the public routes, which answer
 * it as before.
 */
const binaryContentType = /^application\/(?:proto|connect\+proto|grpc(?:-web)?(?:\+proto)?)$/i;

function isBinaryProtobuf(req: Req): boolean {
  const type = req.headers["content-type"];
  return typeof type === "string" && binaryContentType.test(type);
}

/** The request with its body counted on the way in (compressed bodies are counted once inflated). */
function withBatchGuard(req: Req, request: UniversalServerRequest, limit: number): UniversalServerRequest {
  const body = request.body;
  if (typeof body !== "object" || body === null || !(Symbol.asyncIterator in body)) return request;
  const protocol = rpcProtocolOf(req);
  if (protocol === "grpc-web-text") return request;
  const encoding = String(req.headers["content-encoding"] ?? "identity").toLowerCase();
  if (protocol === "connect-unary" && encoding !== "identity") return request;
  return { ...request, body: guardBody(body as AsyncIterable<Uint8Array>, protocol !== "connect-unary", limit) };
}

/**
 * Connect labels every decompression failure but one kind of corrupt data
 * `internal`; a body that does not inflate is the client's fault.
 */
function clientFaultDecompression(inner: Compression): Compression {
  return {
    name: inner.name,
    compress: (bytes) => inner.compress(bytes),
    decompress: (bytes, readMaxBytes) =>
      inner.decompress(bytes, readMaxBytes).catch((error: unknown) => {
        const connectError = ConnectError.from(error);
        if (connectError.code !== Code.Internal) throw connectError;
        throw new ConnectError(`request body is not valid ${inner.name} data`, Code.InvalidArgument, undefined, undefined, error);
      }),
  };
}
