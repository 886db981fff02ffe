import { Code, ConnectError } from "@connectrpc/connect";
import type { Compression } from "@connectrpc/connect/protocol";

/**
 * Refuses a tracking request whose batch holds more messages than allowed
 * while its bytes arrive, before protobuf decodes it: decoding 500 KB of
 * empty messages (250,000 of them in binary) costs about a second of CPU,
 * which the cap after decoding would come too late to save.
 *
 * It counts the elements of the top-level repeated field: in binary, the
 * occurrences of field 1 (the only field of BatchRequest); in JSON, the
 * elements of an array that is a value of the top-level object. A request
 * of another method (TrackRequest: one field, an object in JSON) counts 1
 * or 0, so every TrackingService method can pass through it.
 */
export interface BatchCountScanner {
  push(bytes: Uint8Array): void;
}

export function tooManyMessages(limit: number): ConnectError {
  return new ConnectError(
    `batch: has more than ${limit} messages, over the limit of ${limit} per request: send them in several batches`,
    Code.InvalidArgument,
  );
}

export function createBatchCountScanner(limit: number): BatchCountScanner {
  let format: "undecided" | "binary" | "json" | "other" = "undecided";
  let count = 0;
  const counted = () => {
    if (++count > limit) throw tooManyMessages(limit);
  };
  // Binary: reading a tag, a length or a varint value, or skipping a field's bytes.
  let mode: "tag" | "length" | "varint" | "skip" = "tag";
  let varint = 0;
  let shift = 0;
  let skip = 0;
  let field = 0;
  // JSON: nesting, strings, and whether the depth-2 container is an array still empty.
  let depth = 0;
  let inString = false;
  let escaped = false;
  let arrayAtTwo = false;
  let awaitingFirst = false;

  function binary(byte: number) {
    if (mode === "skip") {
      if (--skip === 0) mode = "tag";
      return;
    }
    varint += (byte & 0x7f) * 2 ** shift;
    shift += 7;
    if (byte & 0x80) return;
    const value = varint;
    varint = 0;
    shift = 0;
    if (mode === "tag") {
      field = Math.floor(value / 8);
      const wire = value % 8;
      if (wire === 2) mode = "length";
      else if (wire === 0) mode = "varint";
      else if (wire === 1 || wire === 5) [mode, skip] = ["skip", wire === 1 ? 8 : 4];
      else format = "other"; // not a BatchRequest: protobuf will say so
    } else if (mode === "length") {
      if (field === 1) counted();
      skip = value;
      mode = value === 0 ? "tag" : "skip";
    } else {
      mode = "tag";
    }
  }

  /** The first element of the batch array shows itself by any non-space byte. */
  function firstElement() {
    if (awaitingFirst && depth === 2 && arrayAtTwo) {
      awaitingFirst = false;
      counted();
    }
  }

  function json(byte: number) {
    if (inString) {
      if (escaped) escaped = false;
      else if (byte === 0x5c) escaped = true;
      else if (byte === 0x22) inString = false;
      return;
    }
    if (byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09) return;
    if (byte === 0x5d || byte === 0x7d) {
      depth--;
      return;
    }
    firstElement();
    if (byte === 0x22) {
      inString = true;
    } else if (byte === 0x7b || byte === 0x5b) {
      depth++;
      if (depth === 2) {
        arrayAtTwo = byte === 0x5b;
        awaitingFirst = arrayAtTwo;
      }
    } else if (byte === 0x2c && depth === 2 && arrayAtTwo) {
      counted();
    }
  }

  return {
    push(bytes) {
      for (let i = 0; i < bytes.length && format !== "other"; i++) {
        const byte = bytes[i]!;
        if (format === "undecided") {
          // JSON may start with spaces; a binary BatchRequest starts with 0x0a (field 1).
          if (byte === 0x20 || byte === 0x0d || byte === 0x09) continue;
          format = byte === 0x7b ? "json" : "binary";
        }
        if (format === "json") json(byte);
        else binary(byte);
      }
    },
  };
}

/**
 * Passes a request body through, counting as it goes. `enveloped`: the gRPC,
 * gRPC-Web and Connect streaming framing (5-byte headers); a compressed
 * envelope is counted by guardDecompression instead.
 */
export async function* guardBody(body: AsyncIterable<Uint8Array>, enveloped: boolean, limit: number): AsyncGenerator<Uint8Array> {
  let scanner = createBatchCountScanner(limit);
  let header: number[] = [];
  let remaining = 0;
  let compressed = false;
  // Iterated by hand: on a refusal, for-await would close the request
  // stream, dropping the connection before the answer is written. The rest
  // of the body is left to the adapter, which drops it after answering.
  const iterator = body[Symbol.asyncIterator]();
  for (;;) {
    const next = await iterator.next();
    if (next.done) return;
    const chunk = next.value;
    if (!enveloped) {
      scanner.push(chunk);
      yield chunk;
      continue;
    }
    let i = 0;
    while (i < chunk.length) {
      if (remaining === 0) {
        header.push(chunk[i++]!);
        if (header.length === 5) {
          compressed = (header[0]! & 1) === 1;
          remaining = ((header[1]! << 24) | (header[2]! << 16) | (header[3]! << 8) | header[4]!) >>> 0;
          header = [];
          scanner = createBatchCountScanner(limit);
        }
        continue;
      }
      const take = Math.min(remaining, chunk.length - i);
      if (!compressed) scanner.push(chunk.subarray(i, i + take));
      remaining -= take;
      i += take;
    }
    yield chunk;
  }
}

/** Counts the messages of a compressed body once inflated, before it is decoded. */
export function guardDecompression(inner: Compression, limit: number): Compression {
  return {
    name: inner.name,
    compress: (bytes) => inner.compress(bytes),
    decompress: async (bytes, readMaxBytes) => {
      const plain = await inner.decompress(bytes, readMaxBytes);
      createBatchCountScanner(limit).push(plain);
      return plain;
    },
  };
}
