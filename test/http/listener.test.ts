import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { afterEach, describe, expect, test } from "vitest";
import { defaultConnectionLimits, type ConnectionLimits } from "../../src/http/connection-limits.js";
import { listen, type Listener, type RequestHandler } from "../../src/http/listener.js";

const short: ConnectionLimits = {
  firstByteTimeoutMs: 300,
  headersTimeoutMs: 600,
  bodyStallTimeoutMs: 500,
  requestTimeoutMs: 2_000,
  keepAliveTimeoutMs: 3_000,
  maxConnections: 10_000,
  checkIntervalMs: 25,
};
/**
 * Longer than any test runs: a test that checks one timeout sets the others
 * to this, so only that one can close the connection. A close then proves
 * the timeout works, and its time only has to be at or after the deadline:
 * no upper bound, which a busy machine (late timers) would break.
 */
const never = 600_000;
const only = (limit: keyof Omit<ConnectionLimits, "maxConnections" | "checkIntervalMs">): ConnectionLimits => ({
  firstByteTimeoutMs: never,
  headersTimeoutMs: never,
  bodyStallTimeoutMs: never,
  requestTimeoutMs: never,
  keepAliveTimeoutMs: never,
  maxConnections: short.maxConnections,
  checkIntervalMs: short.checkIntervalMs,
  [limit]: short[limit],
});

/** No timeout can close a connection within a test: only the cap can. */
const noTimeouts: ConnectionLimits = { ...only("keepAliveTimeoutMs"), keepAliveTimeoutMs: never };

/** Echoes the body length after reading it all, as a real endpoint would. */
const echo: RequestHandler = (req, res) => {
  let size = 0;
  req.on("data", (chunk: Buffer) => (size += chunk.length));
  req.on("end", () => {
    res.writeHead(200, { "content-type": "text/plain" });
    res.end(`read ${size}`);
  });
};

let listener: Listener | undefined;
const openSockets: net.Socket[] = [];
afterEach(async () => {
  for (const socket of openSockets.splice(0)) socket.destroy();
  await listener?.close(100);
  listener = undefined;
});

async function start(limits: Partial<ConnectionLimits> = short): Promise<number> {
  listener = await listen(echo, 0, "127.0.0.1", limits);
  return listener.port;
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => resolve(socket));
    socket.on("error", reject);
    openSockets.push(socket);
  });
}

/** Milliseconds from now until the server closes the socket. */
function closedAfter(socket: net.Socket, startedAt: number): Promise<number> {
  return new Promise((resolve) => {
    socket.on("error", () => {});
    socket.once("close", () => resolve(Date.now() - startedAt));
    socket.resume();
  });
}

async function normalRequest(port: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}/`, { method: "POST", body: "hello" });
  return response.text();
}

/** Writes one byte of `text` every `everyMs` until the socket closes. */
function trickle(socket: net.Socket, text: string, everyMs: number): void {
  let i = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || i >= text.length) return clearInterval(timer);
    socket.write(text[i++]!);
  }, everyMs);
  socket.once("close", () => clearInterval(timer));
}

describe("connection timeouts", () => {
  test("a connection that sends nothing is closed after the first-byte timeout; a normal request still succeeds", async () => {
    const port = await start(only("firstByteTimeoutMs"));
    const startedAt = Date.now();
    const silent = await connect(port);
    const closed = closedAfter(silent, startedAt);
    expect(await normalRequest(port)).toBe("read 5");
    const elapsed = await closed;
    expect(elapsed).toBeGreaterThanOrEqual(short.firstByteTimeoutMs - 50);
  });

  test("request headers sent one byte at a time are cut at the headers timeout", async () => {
    const port = await start(only("headersTimeoutMs"));
    const socket = await connect(port);
    const startedAt = Date.now();
    const closed = closedAfter(socket, startedAt);
    // Steady bytes: never silent, never complete.
    trickle(socket, `POST / HTTP/1.1\r\nHost: x\r\nX-Slow: ${"a".repeat(500)}`, 40);
    expect(await normalRequest(port)).toBe("read 5");
    const elapsed = await closed;
    expect(elapsed).toBeGreaterThanOrEqual(short.headersTimeoutMs - 50);
  });

  test("a body that stalls is cut after the stall timeout", async () => {
    const port = await start(only("bodyStallTimeoutMs"));
    const socket = await connect(port);
    socket.write("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789");
    const startedAt = Date.now();
    const closed = closedAfter(socket, startedAt);
    expect(await normalRequest(port)).toBe("read 5");
    const elapsed = await closed;
    expect(elapsed).toBeGreaterThanOrEqual(short.bodyStallTimeoutMs - 50);
  });

  test("a body trickling in without stalling is cut at the request timeout", async () => {
    // The stall timeout stays short: bytes keep coming, so it must not fire.
    const port = await start({ ...only("requestTimeoutMs"), bodyStallTimeoutMs: short.bodyStallTimeoutMs });
    const socket = await connect(port);
    socket.write("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n");
    const startedAt = Date.now();
    const closed = closedAfter(socket, startedAt);
    trickle(socket, "x".repeat(1000), 100);
    const elapsed = await closed;
    expect(elapsed).toBeGreaterThanOrEqual(short.requestTimeoutMs - 50);
  });

  test("a kept-alive connection may sit idle between requests up to the keep-alive timeout", async () => {
    const port = await start();
    const socket = await connect(port);
    let received = "";
    const answers: Array<() => void> = [];
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString();
      if (received.includes("read 3")) {
        received = "";
        answers.shift()?.();
      }
    });
    const request = () => {
      const answered = new Promise<void>((resolve) => answers.push(resolve));
      socket.write("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc");
      return answered;
    };
    await request();
    // Idle longer than the first-byte and headers timeouts, shorter than keep-alive: still open.
    await new Promise((resolve) => setTimeout(resolve, short.headersTimeoutMs + 100));
    expect(socket.destroyed).toBe(false);
    await request();
    const idleSince = Date.now();
    const elapsed = await new Promise<number>((resolve) => socket.once("close", () => resolve(Date.now() - idleSince)));
    expect(elapsed).toBeGreaterThanOrEqual(short.keepAliveTimeoutMs - 100);
  });

  test("HTTP/2: a session that never opens a stream, and an idle one, are closed; a stalled stream is reset", async () => {
    const port = await start();
    const url = `http://127.0.0.1:${port}`;
    const neverUsed = http2.connect(url);
    neverUsed.on("error", () => {});
    const t0 = Date.now();
    const neverUsedClosed = new Promise<number>((resolve) => neverUsed.once("close", () => resolve(Date.now() - t0)));

    const used = http2.connect(url);
    used.on("error", () => {});
    const answer = await new Promise<string>((resolve, reject) => {
      const stream = used.request({ ":method": "POST", ":path": "/" });
      let text = "";
      stream.on("data", (chunk: Buffer) => (text += chunk.toString()));
      stream.on("end", () => resolve(text));
      stream.on("error", reject);
      stream.end("hi");
    });
    expect(answer).toBe("read 2");
    const t1 = Date.now();
    const usedClosed = new Promise<number>((resolve) => used.once("close", () => resolve(Date.now() - t1)));

    const stalling = http2.connect(url);
    stalling.on("error", () => {});
    const stream = stalling.request({ ":method": "POST", ":path": "/", "content-length": "100" });
    stream.on("error", () => {});
    stream.write("0123456789");
    const t2 = Date.now();
    const reset = await new Promise<{ code: number; after: number }>((resolve) =>
      stream.once("close", () => resolve({ code: stream.rstCode ?? -1, after: Date.now() - t2 })),
    );
    expect(reset.code).toBe(http2.constants.NGHTTP2_CANCEL);
    expect(reset.after).toBeGreaterThanOrEqual(short.bodyStallTimeoutMs - 50);
    stalling.destroy();

    const neverUsedAfter = await neverUsedClosed;
    expect(neverUsedAfter).toBeGreaterThanOrEqual(short.headersTimeoutMs - 50);
    const usedAfter = await usedClosed;
    expect(usedAfter).toBeGreaterThanOrEqual(short.keepAliveTimeoutMs - 100);
  });
});

describe("connection cap", () => {
  test("at the cap, silent connections make room for real requests", async () => {
    const port = await start({ ...short, firstByteTimeoutMs: 60_000, maxConnections: 20 });
    const silent = await Promise.all(Array.from({ length: 40 }, () => connect(port)));
    const closed = silent.map((socket) => closedAfter(socket, Date.now()));
    for (let i = 0; i < 5; i++) expect(await normalRequest(port)).toBe("read 5");
    // The oldest silent ones were dropped to make room: at most 20 are left open.
    await Promise.race([Promise.all(closed.slice(0, 25)), new Promise((resolve) => setTimeout(resolve, 2_000))]);
    expect(silent.filter((socket) => !socket.destroyed && !socket.closed).length).toBeLessThanOrEqual(20);
  });

  test("at the cap, the slowest bodies make room for new connections, one for each", async () => {
    let started = 0;
    let allStarted: () => void = () => {};
    const allIn = new Promise<void>((resolve) => (allStarted = resolve));
    // "/hold" answers only when released: a request in our hands keeps its slot, so each new one costs one eviction.
    const held: Array<() => void> = [];
    let onHeld: () => void = () => {};
    listener = await listen(
      (req, res) => {
        if (req.url !== "/hold") {
          if (++started === 20) allStarted();
          return echo(req, res);
        }
        req.resume();
        req.on("end", () => {
          held.push(() => res.end("released"));
          onHeld();
        });
      },
      0,
      "127.0.0.1",
      { ...noTimeouts, maxConnections: 20 },
    );
    const port = listener.port;
    // Ten trickle their body (one byte so far), then ten send theirs at a real rate (half of it so far).
    const slow = await Promise.all(Array.from({ length: 10 }, () => connect(port)));
    for (const socket of slow) socket.write("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n0");
    const steady = await Promise.all(Array.from({ length: 10 }, () => connect(port)));
    for (const socket of steady) socket.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n${"0".repeat(50_000)}`);
    await allIn;
    const closedOnes: net.Socket[] = [];
    const fiveClosed = new Promise<void>((resolve) => {
      for (const socket of [...slow, ...steady]) {
        void closedAfter(socket, 0).then(() => closedOnes.push(socket) === 5 && resolve());
      }
    });

    const answers: Array<Promise<string>> = [];
    for (let i = 0; i < 5; i++) {
      const inHand = new Promise<void>((resolve) => (onHeld = resolve));
      const answer = requestOnNewConnection(port, "/hold");
      answers.push(answer);
      // A refused connection fails here (ECONNRESET) rather than never arriving.
      await Promise.race([inHand, answer]);
    }
    await fiveClosed;
    expect(closedOnes.every((socket) => slow.includes(socket))).toBe(true);
    expect(steady.every((socket) => !socket.destroyed)).toBe(true);
    for (const release of held) release();
    expect(await Promise.all(answers)).toEqual(Array(5).fill("released"));
  });

  test("when every connection is busy in our own handler, a new one is refused instead of exceeding the cap", async () => {
    let complete = 0;
    let allComplete: () => void = () => {};
    const allIn = new Promise<void>((resolve) => (allComplete = resolve));
    // Reads each body whole, then keeps the answer: the server is the slow party.
    listener = await listen(
      (req) => {
        req.resume();
        req.on("end", () => ++complete === 3 && allComplete());
      },
      0,
      "127.0.0.1",
      { ...noTimeouts, maxConnections: 3 },
    );
    const port = listener.port;
    const busy = await Promise.all(Array.from({ length: 3 }, () => connect(port)));
    for (const socket of busy) socket.write("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n0");
    await allIn;
    const extra = await connect(port);
    await closedAfter(extra, Date.now());
    expect(busy.every((socket) => !socket.destroyed)).toBe(true);
  });
});

/** One request on a connection of its own (no keep-alive agent), answered with its body. */
function requestOnNewConnection(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, method: "POST", path, agent: false }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve(body));
    });
    req.on("error", reject);
    req.end("hello");
  });
}

test("the defaults are the documented ones", async () => {
  expect(defaultConnectionLimits).toEqual({
    firstByteTimeoutMs: 10_000,
    headersTimeoutMs: 20_000,
    bodyStallTimeoutMs: 20_000,
    requestTimeoutMs: 300_000,
    keepAliveTimeoutMs: 65_000,
    maxConnections: 10_000,
    checkIntervalMs: 1_000,
  });
  const { readFile } = await import("node:fs/promises");
  const doc = await readFile(new URL("../../docs/limits.md", import.meta.url), "utf8");
  for (const row of [
    /silent connection.*\| 10 s/i,
    /headers.*\| 20 s/i,
    /body stall.*\| 20 s/i,
    /whole body.*\| 5 min/i,
    /keep-alive.*\| 65 s/i,
    /connections.*\| 10,000/i,
  ]) {
    expect(doc).toMatch(row);
  }
});
