import type { Transform } from "node:stream";
import type { Req } from "./types.js";

/**
 * How long a request body may take: a deadline, and a minimum average rate
 * after a grace, so that a trickle is cut long before the deadline. The
 * same for every body read by hand (/v1, /hooks); docs/limits.md.
 */
export interface BodyTiming {
  /** The whole body must be in this long after reading began (just after the headers): else 408. */
  deadlineMs: number;
  /** After `rateGraceMs`, at least this many bytes a second on average: else 408 (0: no minimum). */
  minBytesPerSecond: number;
  rateGraceMs: number;
}

export const defaultBodyTiming: BodyTiming = { deadlineMs: 10_000, minBytesPerSecond: 1024, rateGraceMs: 2_000 };

/**
 * What one request body may cost. Bytes bound memory; pieces bound the work
 * per byte (each HTTP chunk or network read is an allocation and an event,
 * so a body of one-byte chunks costs a hundred times its size); time bounds
 * how long a connection and a buffer are held.
 */
export interface BodyLimits extends BodyTiming {
  /** Bytes of the body (after decoding, when a decoder is given): over this, 413. */
  maxBytes: number;
}

/**
 * Pieces a body may arrive in: this many for free, then one per
 * `minAverageChunkBytes` received. A client writing its body in any real
 * size never comes near it (a network read is up to 64 KB; SDKs send one
 * piece); a body of one-byte chunks is cut after about this many.
 */
export const freeChunks = 1024;
export const minAverageChunkBytes = 64;

export function overChunkBudget(chunks: number, wireBytes: number): boolean {
  return chunks > freeChunks + wireBytes / minAverageChunkBytes;
}

export type BodyRefusalReason = "too_large" | "too_fragmented" | "too_slow";

/**
 * A body refused while it was read: 413 (too large, or in too many pieces)
 * or 408 (too slow). The connection should be closed after the answer for
 * the last two: reading on is what they must not be allowed.
 */
export class BodyRefusal extends Error {
  constructor(
    readonly status: 408 | 413,
    readonly reason: BodyRefusalReason,
    message: string,
  ) {
    super(message);
  }

  /** True when the rest must not be read: the connection is closed after the answer. */
  get closesConnection(): boolean {
    return this.reason !== "too_large";
  }
}

/** The client went away mid-body: nobody to answer. */
export class BodyClientGone extends Error {
  constructor() {
    super("the client disconnected before the body was complete");
  }
}

export function bodyTooLarge(maxBytes: number, counted = ""): BodyRefusal {
  return new BodyRefusal(413, "too_large", `request body is over the limit of ${maxBytes} bytes (${kb(maxBytes)})${counted}`);
}

const kb = (bytes: number) => `${Math.round(bytes / 1024)} KB`;
const noop = () => {};
const initialCapacity = 16 * 1024;

/**
 * Reads a request's whole body into one buffer that grows by doubling (the
 * pieces are copied and dropped, never kept), decoded when a decoder is
 * given. Refuses it (BodyRefusal) as soon as it passes `maxBytes`, arrives
 * in too many pieces (overChunkBudget), or is too slow: not complete within
 * `deadlineMs`, or under `minBytesPerSecond` after the grace. Rejects with
 * BodyClientGone when the client disconnects. On any failure the request
 * is left paused for the caller to answer and then drop or close.
 */
export function readRequestBody(req: Req, limits: BodyLimits, decoder?: Transform): Promise<Buffer> {
  if (req.destroyed || ("aborted" in req && req.aborted)) return Promise.reject(new BodyClientGone());
  return new Promise<Buffer>((resolve, reject) => {
    const body = createGrowingBuffer(initialCapacityFor(req, limits.maxBytes), limits.maxBytes);
    const started = performance.now();
    let chunks = 0;
    let wireBytes = 0;
    let requestEnded = false;
    let settled = false;

    const finish = (error?: Error) => {
      if (settled) return;
      settled = true;
      clearInterval(timer);
      req.off("data", onWire);
      req.off("end", onEnd);
      req.off("close", onClose);
      if (decoder) stopDecoder(decoder, error !== undefined);
      if (error) {
        req.pause();
        reject(error);
      } else {
        resolve(body.contents());
      }
    };
    const onPlain = (chunk: Buffer) => {
      if (settled) return;
      if (body.size + chunk.length > limits.maxBytes)
        return finish(bodyTooLarge(limits.maxBytes, decoder ? ", counted after decompression" : ""));
      body.append(chunk);
    };
    const onWire = (chunk: Buffer) => {
      chunks++;
      wireBytes += chunk.length;
      if (overChunkBudget(chunks, wireBytes)) return finish(tooFragmented(chunks));
      if (!decoder) return onPlain(chunk);
      // Backpressure: do not queue compressed input faster than it inflates.
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
      if (!requestEnded) finish(new BodyClientGone());
    };
    const timer = setInterval(() => {
      const problem = slowness(limits, performance.now() - started, wireBytes);
      if (problem) finish(new BodyRefusal(408, "too_slow", problem));
    }, rateCheckInterval(limits));

    // Errors of an aborted request are reported through 'close'; this only
    // keeps them from surfacing as unhandled 'error' events.
    req.on("error", noop);
    req.on("data", onWire);
    req.on("end", onEnd);
    req.on("close", onClose);
    if (decoder) {
      decoder.on("data", onPlain);
      decoder.on("end", () => finish());
      decoder.on("error", (error: Error) => finish(new InvalidEncoding(error)));
    }
  });
}

/** The decoder failed: the body is not what its Content-Encoding says (the caller answers 400). */
export class InvalidEncoding extends Error {
  constructor(cause: Error) {
    super(cause.message, { cause });
  }
}

function tooFragmented(chunks: number): BodyRefusal {
  return new BodyRefusal(
    413,
    "too_fragmented",
    `request body arrived in too many pieces (${chunks}; at most ${freeChunks} plus one per ${minAverageChunkBytes} bytes): send it in larger chunks`,
  );
}

/** Why the body is too slow at `elapsedMs`, or undefined. */
function slowness(limits: BodyLimits, elapsedMs: number, wireBytes: number): string | undefined {
  if (elapsedMs >= limits.deadlineMs) return `request body was not complete within ${limits.deadlineMs} ms`;
  const owed = (limits.minBytesPerSecond * (elapsedMs - limits.rateGraceMs)) / 1000;
  if (wireBytes < owed) {
    return `request body is arriving slower than ${limits.minBytesPerSecond} bytes a second (after the first ${limits.rateGraceMs} ms)`;
  }
  return undefined;
}

/** Checked a few times within the deadline, and at least once a second. */
function rateCheckInterval(limits: BodyLimits): number {
  return Math.max(10, Math.min(1000, Math.floor(limits.deadlineMs / 4)));
}

function stopDecoder(decoder: Transform, failed: boolean): void {
  decoder.removeAllListeners("data");
  decoder.removeAllListeners("end");
  // Stops inflating; the noop keeps a late zlib error from being unhandled.
  decoder.on("error", noop);
  if (failed) decoder.destroy();
}

/** Content-Length when the client declared a valid one (absent with chunked uploads). */
export function declaredLength(req: Req): number | undefined {
  const header = req.headers["content-length"];
  if (typeof header !== "string") return undefined;
  const text = header.trim();
  if (text.length === 0) return undefined;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 48 || code > 57) return undefined;
  }
  return Number(text);
}

function initialCapacityFor(req: Req, maxBytes: number): number {
  const declared = declaredLength(req);
  return Math.min(maxBytes, declared !== undefined && declared > 0 ? declared : initialCapacity);
}

interface GrowingBuffer {
  readonly size: number;
  append(chunk: Buffer): void;
  contents(): Buffer;
}

/** Grows by doubling up to `cap` (the caller never appends past it). */
function createGrowingBuffer(initial: number, cap: number): GrowingBuffer {
  let buffer = Buffer.allocUnsafe(Math.max(1, initial));
  let size = 0;
  return {
    get size() {
      return size;
    },
    append(chunk) {
      if (size + chunk.length > buffer.length) {
        const grown = Buffer.allocUnsafe(Math.max(Math.min(buffer.length * 2, cap), size + chunk.length));
        buffer.copy(grown, 0, 0, size);
        buffer = grown;
      }
      chunk.copy(buffer, size);
      size += chunk.length;
    },
    contents() {
      // A copy only when more than half would be wasted.
      const filled = buffer.subarray(0, size);
      return size * 2 < buffer.length ? Buffer.from(filled) : filled;
    },
  };
}
