import net from "node:net";
import { describe, expect } from "vitest";
import { testWith } from "../helpers/fixtures.js";
import { insertWebhookSource } from "../helpers/hook-sources.js";
import type { TestServer } from "../helpers/server.js";
import { basicAuth, post } from "../compat/support.js";

/**
 * Bodies sent as HTTP chunks of one byte each: 6 bytes on the wire per body
 * byte, and to a naive reader one buffer and one event per byte. Each is
 * cut after a bounded number of pieces, answered 413, and its connection
 * closed, while other clients are answered as usual.
 */

const bodyTimeoutMs = 60_000;
const test = testWith({ server: { config: { bodies: { deadlineMs: bodyTimeoutMs, minBytesPerSecond: 0, rateGraceMs: 0 } } } });
let writeKey: string;

test.beforeAll(async ({ server }) => {
  // A deadline far away: only the piece count may cut these bodies.
  writeKey = (await server.createSource()).writeKey;
});

interface RawAnswer {
  status: number;
  text: string;
  /** The server closed the connection (rather than waiting for more). */
  closed: boolean;
}

/**
 * POSTs `body` one byte per chunk on a raw socket, a 64 KB write at a time
 * (waiting for the socket to drain), until the server answers or every
 * chunk is out; resolves when the server has answered and closed.
 */
function postInOneByteChunks(server: TestServer, path: string, headers: Record<string, string>, body: string): Promise<RawAnswer> {
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname);
    let received = "";
    let answered = false;
    socket.setEncoding("latin1");
    socket.on("data", (text: string) => {
      received += text;
      answered = true;
    });
    socket.on("error", (error: NodeJS.ErrnoException) => {
      // Writing after the server closed: the answer, if any, is in `received`.
      if (error.code !== "EPIPE" && error.code !== "ECONNRESET") reject(error);
    });
    socket.on("close", () => resolve({ ...parseAnswer(received), closed: true }));
    const head = [`POST ${path} HTTP/1.1`, `host: ${url.host}`, "content-type: application/json", "transfer-encoding: chunked"];
    for (const [name, value] of Object.entries(headers)) head.push(`${name}: ${value}`);
    socket.write(`${head.join("\r\n")}\r\n\r\n`);
    const perWrite = Math.floor((64 * 1024) / 6);
    const writeFrom = (start: number): void => {
      if (answered || socket.destroyed) return;
      if (start >= body.length) {
        socket.write("0\r\n\r\n");
        return;
      }
      const frames = [...body.slice(start, start + perWrite)].map((byte) => `1\r\n${byte}\r\n`).join("");
      if (socket.write(frames)) setImmediate(() => writeFrom(start + perWrite));
      else socket.once("drain", () => writeFrom(start + perWrite));
    };
    writeFrom(0);
  });
}

function parseAnswer(raw: string): { status: number; text: string } {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0);
  const at = raw.indexOf("\r\n\r\n");
  if (at < 0) return { status, text: "" };
  const head = raw.slice(0, at).toLowerCase();
  let rest = raw.slice(at + 4);
  if (!head.includes("transfer-encoding: chunked")) return { status, text: rest };
  let text = "";
  for (;;) {
    const lineEnd = rest.indexOf("\r\n");
    const size = Number.parseInt(rest.slice(0, lineEnd), 16);
    if (!(size > 0)) return { status, text };
    text += rest.slice(lineEnd + 2, lineEnd + 2 + size);
    rest = rest.slice(lineEnd + 4 + size);
  }
}

/** A batch of `bytes` bytes of valid JSON (its one call padded). */
function paddedBatch(bytes: number): string {
  const shell = JSON.stringify({ batch: [{ type: "track", event: "padded", userId: "u", properties: { pad: "" } }] });
  return shell.replace('"pad":""', `"pad":"${"x".repeat(bytes - shell.length)}"`);
}

describe("one-byte chunks", () => {
  test("/v1/batch with a write key: 413 naming the pieces, the connection closed, and a concurrent /v1/track answered", async ({
    server,
  }) => {
    const body = paddedBatch(200_000);
    const attacks = Array.from({ length: 4 }, () => postInOneByteChunks(server, "/v1/batch", { authorization: basicAuth(writeKey) }, body));
    const track = await post(server, "/v1/track", { userId: "u", event: "during" }, { writeKey });
    expect(track.status).toBe(200);
    for (const answer of await Promise.all(attacks)) {
      expect(answer.status).toBe(413);
      expect(JSON.parse(answer.text)).toMatchObject({ code: "request_too_fragmented" });
      expect(JSON.parse(answer.text).message).toMatch(/too many pieces/);
      expect(answer.closed).toBe(true);
    }
  });

  test("/hooks/<token> of a source with no verifier: 413 naming the pieces, the connection closed", async ({ server }) => {
    const source = await insertWebhookSource(server);
    const answers = await Promise.all(
      Array.from({ length: 4 }, () => postInOneByteChunks(server, `/hooks/${source.token}`, {}, paddedBatch(200_000))),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(413);
      expect(JSON.parse(answer.text).error).toMatch(/too many pieces/);
      expect(answer.closed).toBe(true);
    }
    const stored = await server.pool.query("SELECT count(*)::int AS n FROM hook_requests WHERE source_id = $1", [source.id]);
    expect(stored.rows[0].n).toBe(0);
  });

  test("TrackingService over Connect: resource_exhausted naming the pieces, the connection closed", async ({ server }) => {
    const body = JSON.stringify({ event: "padded", userId: "u", properties: { pad: "x".repeat(100_000) } });
    const answer = await postInOneByteChunks(server, "/waypost.v1.TrackingService/Track", { authorization: `Bearer ${writeKey}` }, body);
    expect(answer.status).toBe(429);
    expect(JSON.parse(answer.text)).toMatchObject({ code: "resource_exhausted" });
    expect(JSON.parse(answer.text).message).toMatch(/too many pieces/);
    expect(answer.closed).toBe(true);
  });

  test("a body of a few hundred chunks of ordinary size is read as usual", async ({ server }) => {
    const body = paddedBatch(20_000);
    const answer = await postInChunks(server, "/v1/batch", { authorization: basicAuth(writeKey) }, body, 100);
    expect(answer.status).toBe(200);
  });
});

/** POSTs `body` in chunks of `size` bytes, then reads the answer. */
function postInChunks(
  server: TestServer,
  path: string,
  headers: Record<string, string>,
  body: string,
  size: number,
): Promise<{ status: number }> {
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname);
    let received = "";
    socket.setEncoding("latin1");
    socket.on("error", reject);
    socket.on("data", (text: string) => {
      received += text;
      if (received.includes("\r\n\r\n")) {
        resolve(parseAnswer(received));
        socket.destroy();
      }
    });
    const head = [`POST ${path} HTTP/1.1`, `host: ${url.host}`, "content-type: application/json", "transfer-encoding: chunked"];
    for (const [name, value] of Object.entries(headers)) head.push(`${name}: ${value}`);
    let frames = "";
    for (let at = 0; at < body.length; at += size) {
      const piece = body.slice(at, at + size);
      frames += `${piece.length.toString(16)}\r\n${piece}\r\n`;
    }
    socket.write(`${head.join("\r\n")}\r\n\r\n${frames}0\r\n\r\n`);
  });
}
