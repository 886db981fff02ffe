import { Code, ConnectError } from "@connectrpc/connect";
import type { UniversalServerRequest } from "@connectrpc/connect/protocol";
import { BodyClientGone, BodyRefusal, declaredLength, readRequestBody, type BodyTiming } from "../../http/request-body.js";
import type { Req } from "../../http/types.js";
import { requestTooLarge } from "./request-too-large.js";

/**
 * Reads a unary RPC's whole body before Connect sees it, with the reader of
 * /v1 and /hooks: at most `maxBytes` as sent, a bounded number of pieces,
 * and the same deadline and minimum rate. Connect would read it whole
 * anyway (a unary request is one message); here a body of one-byte chunks
 * or a trickle is refused early, and Connect gets one buffer. A refusal is
 * a ConnectError: `resource_exhausted` (too large, with the RequestTooLarge
 * detail; or in too many pieces), `deadline_exceeded` (too slow), `aborted`
 * (the client went away). `closes` is true when the connection should be
 * closed rather than the rest read.
 */
export async function readUnaryBody(
  req: Req,
  request: UniversalServerRequest,
  options: { maxBytes: number; timing: BodyTiming },
): Promise<UniversalServerRequest> {
  // Refused before a byte is read when the client says up front that it is too large.
  if ((declaredLength(req) ?? 0) > options.maxBytes) throw requestTooLarge(options.maxBytes);
  try {
    const body = await readRequestBody(req, { ...options.timing, maxBytes: options.maxBytes });
    return { ...request, body: once(new Uint8Array(body.buffer, body.byteOffset, body.byteLength)) };
  } catch (error) {
    throw rpcErrorOf(error, options.maxBytes);
  }
}

/** A refusal after which nothing more of the body is read. */
export function closesConnection(error: unknown): boolean {
  return error instanceof ConnectError && error.cause instanceof BodyRefusal && error.cause.closesConnection;
}

function rpcErrorOf(error: unknown, maxBytes: number): unknown {
  if (error instanceof BodyClientGone) return new ConnectError(error.message, Code.Aborted);
  if (!(error instanceof BodyRefusal)) return error;
  if (error.reason === "too_large") return requestTooLarge(maxBytes, error);
  const code = error.reason === "too_slow" ? Code.DeadlineExceeded : Code.ResourceExhausted;
  return new ConnectError(error.message, code, undefined, undefined, error);
}

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}
