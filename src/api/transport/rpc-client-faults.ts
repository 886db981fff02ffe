import { encodeEnvelope, type UniversalServerResponse } from "@connectrpc/connect/protocol";
import { endStreamFlag } from "@connectrpc/connect/protocol-connect";
import { trailerFlag, trailerParse, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";
import type { RpcProtocol } from "./rpc-early-error.js";

/**
 * Connect reports a request body it cannot decode as `internal` (its binary
 * codec is shared with the client side, where an undecodable message is the
 * server's fault). On a server it is the client's fault: these messages are
 * turned into `invalid_argument`, so clients do not retry them and operators
 * are not paged for them. Errors of our own code keep `internal`.
 */
const clientFaultPattern = /^(parse binary|decompression failed|received compressed envelope|request body is not valid)/;

export function isClientFaultMessage(message: string): boolean {
  return clientFaultPattern.test(message);
}

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder();

/** The response with request-decoding failures re-labelled `invalid_argument`, in each protocol's wire form. */
export async function reclassifyClientFaults(response: UniversalServerResponse, protocol: RpcProtocol): Promise<UniversalServerResponse> {
  const body = response.body;
  if (!body || !(Symbol.asyncIterator in body)) return response;
  if (protocol === "connect-unary") {
    // Only an error answer (a short JSON document) is read here; successes stream through untouched.
    if (response.status !== 500) return response;
    const chunks: Uint8Array[] = [];
    for await (const chunk of body) chunks.push(chunk);
    const bytes = Buffer.concat(chunks);
    const rewritten = rewriteConnectErrorJson(bytes, (json) => json) ?? bytes;
    const header = new Headers(response.header);
    header.set("content-length", String(rewritten.byteLength));
    return {
      ...response,
      status: rewritten === bytes ? response.status : 400,
      header,
      body: single(rewritten),
    };
  }
  return { ...response, body: patchStream(body, response, protocol) };
}

async function* single(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

async function* patchStream(
  body: AsyncIterable<Uint8Array>,
  response: UniversalServerResponse,
  protocol: RpcProtocol,
): AsyncGenerator<Uint8Array> {
  for await (const chunk of body) {
    if (protocol === "grpc-web" && chunk[0] === trailerFlag && chunk.byteLength >= 5) {
      const trailer = trailerParse(chunk.subarray(5));
      yield patchGrpcStatus(trailer) ? encodeEnvelope(trailerFlag, trailerSerialize(trailer)) : chunk;
    } else if (protocol === "connect-stream" && chunk[0] === endStreamFlag && chunk.byteLength >= 5) {
      const patched = rewriteConnectErrorJson(chunk.subarray(5), (json) => json.error);
      yield patched ? encodeEnvelope(endStreamFlag, patched) : chunk;
    } else {
      yield chunk;
    }
  }
  // gRPC sends its status in trailers, written after the body ends.
  if (protocol === "grpc" && response.trailer) patchGrpcStatus(response.trailer);
}

function patchGrpcStatus(trailer: Headers): boolean {
  if (trailer.get("grpc-status") !== "13") return false;
  let message = trailer.get("grpc-message") ?? "";
  try {
    message = decodeURIComponent(message);
  } catch {
    // Keep the raw text.
  }
  if (!isClientFaultMessage(message)) return false;
  trailer.set("grpc-status", "3");
  return true;
}

/** Rewrites `{"code":"internal","message":"parse binary: ..."}` (found via `pick`); undefined when it is not such an error. */
function rewriteConnectErrorJson(bytes: Uint8Array, pick: (json: Record<string, unknown>) => unknown): Uint8Array | undefined {
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(utf8Decoder.decode(bytes)) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const error = pick(json) as { code?: unknown; message?: unknown } | undefined;
  if (error?.code !== "internal" || typeof error.message !== "string") return undefined;
  if (!isClientFaultMessage(error.message)) return undefined;
  error.code = "invalid_argument";
  return utf8.encode(JSON.stringify(json));
}
