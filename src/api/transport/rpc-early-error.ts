import { Code, ConnectError } from "@connectrpc/connect";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import { codeToHttpStatus, endStreamFlag, endStreamToJson, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { trailerFlag, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";
import type { Req, Res } from "../../http/types.js";

/** Which of the three RPC protocols (and which Connect flavour) a request speaks, from its Content-Type. */
export type RpcProtocol = "connect-unary" | "connect-stream" | "grpc" | "grpc-web" | "grpc-web-text";

export function rpcProtocolOf(req: Req): RpcProtocol {
  const type = String(req.headers["content-type"] ?? "").toLowerCase();
  if (type.startsWith("application/grpc-web-text")) return "grpc-web-text";
  if (type.startsWith("application/grpc-web")) return "grpc-web";
  if (type.startsWith("application/grpc")) return "grpc";
  if (type.startsWith("application/connect+")) return "connect-stream";
  return "connect-unary";
}

/**
 * Answers an RPC with an error before Connect has seen the request, in the
 * wire form its protocol expects, so every client reports the real code
 * (`unauthenticated`) instead of a protocol error. Used by the credential
 * check that runs before a byte of the body is read.
 */
export function writeEarlyRpcError(req: Req, res: Res, error: ConnectError): void {
  const protocol = rpcProtocolOf(req);
  const requestType = String(req.headers["content-type"] ?? "");
  switch (protocol) {
    case "connect-unary": {
      const body = errorToJsonBytes(error, {});
      res.writeHead(codeToHttpStatus(error.code), {
        "content-type": "application/json",
        "content-length": String(body.byteLength),
      });
      res.end(body);
      return;
    }
    case "connect-stream": {
      const json = JSON.stringify(endStreamToJson(new Headers(), error, {}));
      res.writeHead(200, { "content-type": requestType });
      res.end(encodeEnvelope(endStreamFlag, new TextEncoder().encode(json)));
      return;
    }
    case "grpc": {
      // Trailers-only: the status travels in the only HEADERS frame.
      const headers: Record<string, string> = { "content-type": requestType };
      setTrailerStatus(new Headers(), error).forEach((value, key) => {
        headers[key] = value;
      });
      res.writeHead(200, headers);
      res.end();
      return;
    }
    case "grpc-web":
    case "grpc-web-text": {
      const trailer = encodeEnvelope(trailerFlag, trailerSerialize(setTrailerStatus(new Headers(), error)));
      res.writeHead(200, { "content-type": requestType });
      res.end(protocol === "grpc-web-text" ? Buffer.from(trailer).toString("base64") : trailer);
      return;
    }
  }
}

export function unauthenticated(message: string): ConnectError {
  return new ConnectError(message, Code.Unauthenticated);
}
