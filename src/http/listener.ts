import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { defaultConnectionLimits, type ConnectionLimits } from "./connection-limits.js";
import { createConnectionTracker } from "./connection-tracker.js";
import type { Req, Res } from "./types.js";

export type RequestHandler = (req: Req, res: Res) => void;

export interface Listener {
  port: number;
  /** Stops accepting, lets in-flight requests finish, then closes idle connections. */
  close(graceMs?: number): Promise<void>;
}

const http2Preface = Buffer.from("PRI * HTTP/2.0");

/**
 * HTTP/1.1 and HTTP/2 cleartext (h2c with prior knowledge, as gRPC uses) on
 * one port. Node's cleartext http2 server does not fall back to HTTP/1.1, so
 * each connection's first bytes decide which server gets the socket.
 */
export async function listen(
  handler: RequestHandler,
  port: number,
  host: string,
  connectionLimits: Partial<ConnectionLimits> = {},
): Promise<Listener> {
  const limits = { ...defaultConnectionLimits, ...connectionLimits };
  const tracker = createConnectionTracker(limits);
  // Count requests in flight, so that close() can wait for them and then
  // drop idle keep-alive connections (the http server's own idle tracking
  // does not see sockets handed to it by emit("connection")).
  let active = 0;
  let drained: (() => void) | undefined;
  const counted: RequestHandler = (req, res) => {
    active++;
    tracker.requestStarted(req);
    res.once("close", () => {
      tracker.requestDone(req);
      active--;
      if (active === 0) drained?.();
    });
    handler(req, res);
  };
  const h1 = http.createServer(counted as http.RequestListener);
  // Node's own timers do not see sockets handed over with emit("connection"):
  // the tracker enforces them. This value is announced in Keep-Alive headers.
  h1.keepAliveTimeout = limits.keepAliveTimeoutMs;
  h1.headersTimeout = limits.headersTimeoutMs;
  h1.requestTimeout = 0;
  // A bounded number of streams per HTTP/2 connection, as per connection on HTTP/1.1.
  const h2 = http2.createServer({ settings: { maxConcurrentStreams: 100 } }, counted as never);
  const sessions = new Set<http2.ServerHttp2Session>();
  let handingOff: net.Socket | undefined;
  h2.on("session", (session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
    // emit("connection") creates the session synchronously: this is its socket.
    if (handingOff) tracker.handedOff(handingOff, session);
  });
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    socket.on("error", () => socket.destroy());
    if (!tracker.accept(socket)) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.once("data", (first: Buffer) => {
      socket.pause();
      if (first.subarray(0, 3).equals(http2Preface.subarray(0, 3))) {
        // The http2 session takes over the socket's native handle and first
        // reads what is already buffered in it (the peeked bytes put back
        // here), so the socket is handed over as it is: no JS relay, and the
        // session turns Nagle off on it (a relay never could, so response
        // frames waited for the client's delayed ACK).
        socket.setNoDelay(true);
        socket.unshift(first);
        handingOff = socket;
        h2.emit("connection", socket);
        handingOff = undefined;
      } else {
        tracker.handedOff(socket);
        socket.unshift(first);
        h1.emit("connection", socket);
        socket.resume();
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : port,
    async close(graceMs = 10_000) {
      tracker.stop();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const session of sessions) session.close();
      if (active > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, graceMs);
          drained = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      for (const session of sessions) session.destroy();
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
