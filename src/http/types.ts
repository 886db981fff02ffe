import type http from "node:http";
import type http2 from "node:http2";

/** A request of either protocol the listener serves (HTTP/1.1 or HTTP/2). */
export type Req = http.IncomingMessage | http2.Http2ServerRequest;
export type Res = http.ServerResponse | http2.Http2ServerResponse;

/**
 * An HTTP route mounted beside the RPCs (the compatible /v1 API, the
 * operational routes): true when it answered the request.
 */
export type RouteHandler = (req: Req, res: Res, path: string) => Promise<boolean>;
