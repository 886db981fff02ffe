import type { Transform } from "node:stream";
import zlib from "node:zlib";
import { limits } from "../ingest/limits.js";
import type { Req } from "../http/types.js";
import { ClientGoneError, CompatError } from "./errors.js";

/**
 * After an early answer (413, 401, ...) the rest of the body is read and
 * dropped, so that the client, still uploading, gets to read the answer
 * instead of a connection reset. Past this many bytes the connection is cut:
 * discarding costs little, but not nothing.
 */
export const maxDiscardBytes = 16 * limits.maxRequestBytes;

const noop = () => {};

export function tooLarge(): CompatError {
  return new CompatError(
    413,
    "request_too_large",
    `request body is over the limit of ${limits.maxRequestBytes} bytes (500 KB), counted after decompression`,
  );
}

/** Content-Length when the client declared one (absent with chunked uploads). */
export function declaredLength(req: Req): number | undefined {
  const header = req.headers["content-length"];
  if (typeof header !== "string" || !/^\d+$/.test(header.trim())) return undefined;
  return Number(header.trim());
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
 * Reads the whole body, decompressed, refusing it (413) as soon as the
 * decompressed byte count passes `limit`: a gzip bomb costs at most `limit`
 * bytes of memory and the time to inflate them. Rejects with
 * ClientGoneError when the client disconnects mid-body. On any failure the
 * request is left paused for `discardRest`.
 */
export function readBody(req: Req, limit: number = limits.maxRequestBytes): Promise<Buffer> {
  const decoder = createDecoder(req.headers["content-encoding"]);
  if (req.destroyed || req.aborted) return Promise.reject(new ClientGoneError());
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let requestEnded = false;
    let settled = false;

    const finish = (error?: Error) => {
      if (settled) return;
      settled = true;
      req.off("data", onRaw);
      req.off("end", onEnd);
      req.off("close", onClose);
      if (decoder) {
        decoder.removeAllListeners("data");
        decoder.removeAllListeners("end");
        // Stops inflating; the noop keeps a late zlib error from being unhandled.
        decoder.on("error", noop);
        if (error) decoder.destroy();
      }
      if (error) {
        req.pause();
        reject(error);
      } else {
        resolve(Buffer.concat(chunks, size));
      }
    };
    const onPlain = (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > limit) return finish(tooLarge());
      chunks.push(chunk);
    };
    const onRaw = (chunk: Buffer) => {
      if (!decoder) return onPlain(chunk);
      // Backpressure: do not queue compressed input faster than zlib inflates it.
      if (!decoder.write(chunk)) {
        req.pause();
        decoder.once("drain", () => settled || req.resume());
      }
    };
    const onEnd = () => {
      requestEnded = true;
      if (decoder) decoder.end();
      else finish();
    };
    const onClose = () => {
      if (!requestEnded) finish(new ClientGoneError());
    };

    // Errors of an aborted request are reported through 'close'; this listener
    // only keeps them from surfacing as unhandled 'error' events.
    req.on("error", noop);
    req.on("data", onRaw);
    req.on("end", onEnd);
    req.on("close", onClose);
    if (decoder) {
      decoder.on("data", onPlain);
      decoder.on("end", () => finish());
      decoder.on("error", (error: Error) =>
        finish(
          new CompatError(
            400,
            "invalid_encoding",
            `request body is not valid ${String(req.headers["content-encoding"]).trim().slice(0, 40)} data: ${error.message}`,
          ),
        ),
      );
    }
  });
}

/**
 * Drops what is left of a body we already answered (see maxDiscardBytes), so
 * the connection can serve the next request. Beyond the cap the request is
 * destroyed, which closes its HTTP/1 connection or resets its HTTP/2 stream.
 */
export function discardRest(req: Req): void {
  if (req.complete || req.destroyed) return;
  let discarded = 0;
  req.on("error", noop);
  req.on("data", (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > maxDiscardBytes) req.destroy();
  });
  req.resume();
}
