import type http from "node:http";
import type http2 from "node:http2";

/** A request of either protocol the listener serves (HTTP/1.1 or HTTP/2). */
export type Req = http.IncomingMessage | http2.Http2ServerRequest;
/**
 * The response of either protocol. Node's typings give the two `writeHead`
 * overload sets TypeScript cannot call through a union, so the one form
 * Waypost uses (status, optional headers) is named here once.
 */
export type Res = (http.ServerResponse | http2.Http2ServerResponse) & {
  writeHead(statusCode: number, headers?: http.OutgoingHttpHeaders): unknown;
};

/**
 * An HTTP route mounted beside the RPCs (the compatible /v1 API, the
 * operational routes): true when it answered the request.
 */
export type RouteHandler = (req: Req, res: Res, path: string) => Promise<boolean>;
