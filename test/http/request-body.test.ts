import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { createGunzip, gzipSync } from "node:zlib";
import { afterEach, describe, expect, test } from "vitest";
import { BodyRefusal, freeChunks, minAverageChunkBytes, readRequestBody, type BodyLimits } from "../../src/http/request-body.js";

/**
 * The shared body reader on a real HTTP server over loopback: each request's
 * outcome (its body, or the refusal) is handed to the test.
 */

type Outcome = { body: Buffer } | { refusal: BodyRefusal } | { error: unknown };
let server: http.Server | undefined;

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

async function serve(limits: BodyLimits, options: { gunzip?: boolean } = {}): Promise<{ port: number; next: () => Promise<Outcome> }> {
  const outcomes: Outcome[] = [];
  const waiters: Array<(outcome: Outcome) => void> = [];
  const settle = (outcome: Outcome) => {
    const waiter = waiters.shift();
    if (waiter) waiter(outcome);
    else outcomes.push(outcome);
  };
  server = http.createServer((req, res) => {
    readRequestBody(req, limits, options.gunzip ? createGunzip() : undefined).then(
      (body) => {
        settle({ body });
        res.end("ok");
      },
      (error: unknown) => {
        settle(error instanceof BodyRefusal ? { refusal: error } : { error });
        res.statusCode = error instanceof BodyRefusal ? error.status : 500;
        res.end();
        req.socket.destroy();
      },
    );
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  const port = (server!.address() as AddressInfo).port;
  const next = () => new Promise<Outcome>((resolve) => (outcomes.length > 0 ? resolve(outcomes.shift()!) : waiters.push(resolve)));
  return { port, next };
}

const generous: BodyLimits = { maxBytes: 1024 * 1024, deadlineMs: 60_000, minBytesPerSecond: 0, rateGraceMs: 0 };

/** A raw chunked POST: the head, then `frames` as given; the socket is left open. */
function rawPost(port: number, frames: string | Buffer, headers: string[] = []): net.Socket {
  const socket = net.connect(port, "127.0.0.1");
  socket.on("error", () => {});
  socket.write(["POST / HTTP/1.1", "host: x", "transfer-encoding: chunked", ...headers, "", ""].join("\r\n"));
  socket.write(frames);
  return socket;
}

function chunked(body: Buffer, size: number): Buffer {
  const parts: Buffer[] = [];
  for (let at = 0; at < body.length; at += size) {
    const piece = body.subarray(at, at + size);
    parts.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from("\r\n"));
  }
  return Buffer.concat(parts);
}

describe("what is read", () => {
  test("a body in many pieces is the bytes sent, in order", async () => {
    const { port, next } = await serve(generous);
    const body = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251));
    const socket = rawPost(port, Buffer.concat([chunked(body, 300), Buffer.from("0\r\n\r\n")]));
    const outcome = await next();
    socket.destroy();
    expect(outcome).toHaveProperty("body");
    expect((outcome as { body: Buffer }).body.equals(body)).toBe(true);
  });

  test("a gzip body is inflated, and counted inflated", async () => {
    const { port, next } = await serve({ ...generous, maxBytes: 100_000 }, { gunzip: true });
    const fits = Buffer.alloc(100_000, 0x61);
    rawPost(port, Buffer.concat([chunked(gzipSync(fits), 1000), Buffer.from("0\r\n\r\n")]), ["content-encoding: gzip"]);
    expect(((await next()) as { body: Buffer }).body.equals(fits)).toBe(true);
    rawPost(port, chunked(gzipSync(Buffer.alloc(100_001, 0x61)), 1000), ["content-encoding: gzip"]);
    expect(await next()).toMatchObject({ refusal: { status: 413, reason: "too_large" } });
  });
});

describe("refused", () => {
  test("one byte over maxBytes is a 413 too_large", async () => {
    const { port, next } = await serve({ ...generous, maxBytes: 1000 });
    rawPost(port, chunked(Buffer.alloc(1001, 0x61), 100));
    expect(await next()).toMatchObject({ refusal: { status: 413, reason: "too_large" } });
  });

  test("one-byte chunks are a 413 too_fragmented after the free pieces, well before the body's end", async () => {
    const { port, next } = await serve(generous);
    // Far more than the budget; the reader must stop at about freeChunks.
    rawPost(port, chunked(Buffer.alloc(100_000, 0x61), 1));
    const outcome = await next();
    expect(outcome).toMatchObject({ refusal: { status: 413, reason: "too_fragmented" } });
    const pieces = Number(/\((\d+);/.exec((outcome as { refusal: BodyRefusal }).refusal.message)?.[1]);
    expect(pieces).toBeLessThanOrEqual(freeChunks + Math.ceil(pieces / minAverageChunkBytes) + 1);
  });

  test("a body that stops arriving is a 408 once under the minimum rate, long before the deadline", async () => {
    const { port, next } = await serve({ ...generous, minBytesPerSecond: 1024, rateGraceMs: 200 });
    const socket = rawPost(port, chunked(Buffer.alloc(10, 0x61), 10));
    const outcome = await next();
    socket.destroy();
    expect(outcome).toMatchObject({ refusal: { status: 408, reason: "too_slow" } });
    expect((outcome as { refusal: BodyRefusal }).refusal.message).toMatch(/slower than 1024 bytes a second/);
  });

  test("a body still arriving at the deadline is a 408, however steady", async () => {
    const { port, next } = await serve({ ...generous, deadlineMs: 300 });
    const socket = rawPost(port, "");
    const drip = setInterval(() => socket.write(chunked(Buffer.alloc(100, 0x61), 100)), 20);
    const outcome = await next();
    clearInterval(drip);
    socket.destroy();
    expect(outcome).toMatchObject({ refusal: { status: 408, reason: "too_slow", message: "request body was not complete within 300 ms" } });
  });
});
