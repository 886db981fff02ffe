import type { Transform } from "node:stream";
import zlib from "node:zlib";
import { limits } from "../ingest/limits.js";
export { declaredLength } from "../http/request-body.js";
import { BodyClientGone, BodyRefusal, InvalidEncoding, readRequestBody, type BodyTiming } from "../http/request-body.js";
import type { Req } from "../http/types.js";
import { ClientGoneError, CompatError } from "./errors.js";

/**
 * After an early answer (413, 401, ...) the rest of the body is read and
 * dropped, so that the client, still uploading, gets to read the answer
 * instead of a connection reset. Past this many bytes the connection is cut:
 * discarding costs little, but not nothing.
 */
export const maxDiscardBytes = 16 * limits.maxRequestBytes;

export function tooLarge(): CompatError {
  return new CompatError(
    413,
    "request_too_large",
    `request body is over the limit of ${limits.maxRequestBytes} bytes (500 KB), counted after decompression`,
  );
}

/**
 * A decompressor for the Content-Encoding header, or undefined for an
 * uncompressed body. Node's zlib streams work in bounded chunks (16 KB by
 * default), so a compressed bomb is never inflated in one piece.
 */
export function createDecoder(header: string | string[] | undefined): Transform | undefined {
  const value = (Array.isArray(header) ? header.join(",") : (header ?? "")).trim().toLowerCase();
  switch (value) {
    case "":
    case "identity":
      return undefined;
    case "gzip":
    case "x-gzip":
      return zlib.createGunzip();
    case "deflate":
      return zlib.createInflate();
    case "br":
      return zlib.createBrotliDecompress();
    default:
      throw new CompatError(
        415,
        "unsupported_encoding",
        `Content-Encoding "${value.slice(0, 40)}" is not supported: send the body uncompressed or with gzip, deflate or br`,
      );
  }
}

/**
 * Reads the whole body, decompressed, within `limit` bytes (a gzip bomb
 * costs at most that much memory and the time to inflate it) and the
 * piece count and timing of readRequestBody: a refusal is a CompatError
 * (413, 408, 400 for a corrupt encoding). Rejects with ClientGoneError when
 * the client disconnects mid-body. On any failure the request is left paused
 * for the caller to answer and then finish (http/unread-body.ts).
 */
export async function readBody(req: Req, timing: BodyTiming, limit: number = limits.maxRequestBytes): Promise<Buffer> {
  const decoder = createDecoder(req.headers["content-encoding"]);
  try {
    return await readRequestBody(req, { ...timing, maxBytes: limit }, decoder);
  } catch (error) {
    throw compatErrorOf(req, error);
  }
}

function compatErrorOf(req: Req, error: unknown): unknown {
  if (error instanceof BodyClientGone) return new ClientGoneError();
  if (error instanceof InvalidEncoding) {
    const encoding = String(req.headers["content-encoding"]).trim().slice(0, 40);
    return new CompatError(400, "invalid_encoding", `request body is not valid ${encoding} data: ${error.message}`);
  }
  if (!(error instanceof BodyRefusal)) return error;
  if (error.reason === "too_large") return tooLarge();
  const code = error.reason === "too_slow" ? "request_too_slow" : "request_too_fragmented";
  return new CompatError(error.status, code, error.message);
}

/** Refusals after which the rest of the body is not read: the connection is closed once answered. */
export function closesConnection(error: CompatError): boolean {
  return error.code === "request_too_slow" || error.code === "request_too_fragmented";
}
