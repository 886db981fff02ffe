import http2 from "node:http2";
import type net from "node:net";
import type { ConnectionLimits } from "./connection-limits.js";
import type { Req } from "./types.js";

/** A request's first moments: about one packet of credit (see sendingRate). */
const rateAllowanceBytes = 1024;

/**
 * Where a connection is in its life. Each state has its own deadline:
 * silent (first byte), headers (request headers complete), request (the
 * body keeps arriving), idle (keep-alive). Time spent in our own handler
 * (a body fully received, the answer being computed) has no deadline.
 */
type State = "silent" | "headers" | "request" | "idle";

interface Tracked {
  socket: net.Socket;
  state: State;
  /** When the current state began, and socket.bytesRead then. */
  since: number;
  sinceBytes: number;
  /** socket.bytesRead at the last check, and when it last grew. */
  bytesRead: number;
  lastByteAt: number;
  /** Requests in progress on this connection (several on HTTP/2), with when each began. */
  requests: Map<Req, number>;
  session: http2.ServerHttp2Session | undefined;
  /** An HTTP/2 connection that has not opened a stream yet is held to the headers deadline. */
  everHadRequest: boolean;
}

export interface ConnectionTracker {
  /** A new connection; false when it was refused (the cap is reached and nothing could make room). */
  accept(socket: net.Socket): boolean;
  /** The connection sent its first bytes and was handed to the HTTP/1.1 or HTTP/2 server. */
  handedOff(socket: net.Socket, session?: http2.ServerHttp2Session): void;
  /** A request began (its headers are complete); `onDone` is when its answer closed. */
  requestStarted(req: Req): void;
  requestDone(req: Req): void;
  readonly size: number;
  stop(): void;
}

/**
 * Enforces ConnectionLimits on the raw sockets of a listener. Node's own
 * headersTimeout/requestTimeout do not apply to sockets handed to an HTTP
 * server with emit("connection"), and HTTP/2 has no equivalent, so one
 * periodic check judges every connection by its state and by whether its
 * socket received bytes (socket.bytesRead: correct however Node consumes
 * the socket).
 */
export function createConnectionTracker(limits: ConnectionLimits, now: () => number = Date.now): ConnectionTracker {
  const tracked = new Map<net.Socket, Tracked>();
  const bySession = new WeakMap<http2.ServerHttp2Session, Tracked>();
  // Remembered per request: a closed HTTP/2 stream no longer knows its session.
  const byRequest = new WeakMap<Req, Tracked>();

  const entryOf = (req: Req): Tracked | undefined =>
    "stream" in req ? bySession.get(req.stream.session as http2.ServerHttp2Session) : tracked.get(req.socket as net.Socket);

  function setState(entry: Tracked, state: State) {
    entry.state = state;
    entry.since = now();
    entry.sinceBytes = entry.socket.bytesRead;
  }

  /**
   * The connection to drop for a new one at the cap: the oldest idle one
   * (dropping it loses nothing in progress), else the one sending slowest,
   * among those we are waiting on: silent, sending headers, or sending a
   * body that nothing on our side is behind on. A connection busy in our
   * own handler is never chosen. Whoever holds connections open with
   * trickled bytes (no credentials needed: /v1 reads a body to find a
   * write key) therefore loses them to new clients, one per new
   * connection, instead of locking everyone out; a client that sends at
   * any real rate is never the slowest.
   */
  function evictable(): Tracked | undefined {
    const at = now();
    let idle: Tracked | undefined;
    let slowest: Tracked | undefined;
    let slowestRate = Infinity;
    for (const entry of tracked.values()) {
      if (entry.state === "idle") {
        if (!idle || entry.since < idle.since) idle = entry;
        continue;
      }
      if (entry.state === "request" && !waitingOnClient(entry)) continue;
      const rate = sendingRate(entry, at);
      if (rate < slowestRate) {
        slowest = entry;
        slowestRate = rate;
      }
    }
    return idle ?? slowest;
  }

  /** Every request on the connection is incomplete with nothing of it unread: the client is the slow party. */
  function waitingOnClient(entry: Tracked): boolean {
    if (entry.requests.size === 0) return false;
    for (const req of entry.requests.keys()) if (req.complete || req.readableLength > 0) return false;
    return true;
  }

  /**
   * Bytes per millisecond received since the current state began, counting
   * `rateAllowanceBytes` as already received so that a connection that has
   * just begun is not judged on the nothing it had time to send.
   */
  function sendingRate(entry: Tracked, at: number): number {
    return (entry.socket.bytesRead - entry.sinceBytes + rateAllowanceBytes) / Math.max(at - entry.since, 1);
  }

  function check() {
    const at = now();
    for (const entry of tracked.values()) {
      const bytes = entry.socket.bytesRead;
      if (bytes !== entry.bytesRead) {
        entry.bytesRead = bytes;
        entry.lastByteAt = at;
        // Bytes on an idle HTTP/1.1 connection are the next request's headers.
        if (entry.state === "idle" && !entry.session) setState(entry, "headers");
      }
      const age = at - entry.since;
      switch (entry.state) {
        case "silent":
          if (age >= limits.firstByteTimeoutMs) entry.socket.destroy();
          break;
        case "headers":
          if (age >= limits.headersTimeoutMs) entry.socket.destroy();
          break;
        case "idle": {
          const limit = entry.session && !entry.everHadRequest ? limits.headersTimeoutMs : limits.keepAliveTimeoutMs;
          if (age < limit) break;
          if (entry.session) entry.session.close();
          entry.socket.destroy();
          break;
        }
        case "request":
          cutSlowBodies(entry, at);
          break;
      }
    }
  }

  /**
   * Requests whose body is incomplete while nothing waits unread on our
   * side, and that stalled or ran out of time: the client is too slow.
   * (Unread buffered data means we are the slow party, not the client.)
   */
  function cutSlowBodies(entry: Tracked, at: number) {
    const stalled = at - entry.lastByteAt >= limits.bodyStallTimeoutMs;
    for (const [req, startedAt] of entry.requests) {
      if (req.complete || req.readableLength > 0) continue;
      if (!stalled && at - startedAt < limits.requestTimeoutMs) continue;
      if ("stream" in req) req.stream.close(http2.constants.NGHTTP2_CANCEL);
      else entry.socket.destroy();
    }
  }

  const timer = setInterval(check, limits.checkIntervalMs);
  timer.unref();

  return {
    accept(socket) {
      if (tracked.size >= limits.maxConnections) {
        const victim = evictable();
        if (!victim) return false;
        victim.session?.destroy();
        victim.socket.destroy();
        tracked.delete(victim.socket);
      }
      const at = now();
      tracked.set(socket, {
        socket,
        state: "silent",
        since: at,
        sinceBytes: 0,
        bytesRead: 0,
        lastByteAt: at,
        requests: new Map(),
        session: undefined,
        everHadRequest: false,
      });
      socket.once("close", () => tracked.delete(socket));
      return true;
    },
    handedOff(socket, session) {
      const entry = tracked.get(socket);
      if (!entry) return;
      entry.bytesRead = socket.bytesRead;
      entry.lastByteAt = now();
      if (session) {
        entry.session = session;
        bySession.set(session, entry);
        setState(entry, "idle");
      } else {
        setState(entry, "headers");
      }
    },
    requestStarted(req) {
      const entry = entryOf(req);
      if (!entry) return;
      byRequest.set(req, entry);
      entry.requests.set(req, now());
      entry.everHadRequest = true;
      entry.bytesRead = entry.socket.bytesRead;
      entry.lastByteAt = now();
      if (entry.state !== "request") setState(entry, "request");
    },
    requestDone(req) {
      const entry = byRequest.get(req);
      if (!entry?.requests.delete(req)) return;
      if (entry.requests.size > 0) return;
      // Only bytes after this point belong to a next request.
      entry.bytesRead = entry.socket.bytesRead;
      setState(entry, "idle");
    },
    get size() {
      return tracked.size;
    },
    stop() {
      clearInterval(timer);
    },
  };
}
