import http2 from "node:http2";
import { overChunkBudget } from "./request-body.js";
import type { Req, Res } from "./types.js";

const noop = () => {};

/** Requests handed to closeUnreadRequest: finishUnreadRequest leaves them alone. */
const closing = new WeakSet<Req>();

/**
 * Ends a request whose answer was sent before its body was read (refused
 * credentials, a message over its size limit); call it any time before the
 * answer ends, it acts once the answer is out. HTTP/2: once the answer is
 * out, the stream is reset with NO_ERROR, which tells the client to stop
 * sending; without it a client blocked on flow control waits forever.
 * HTTP/1.1: up to `maxDiscardBytes` more are read and dropped, so a client
 * still uploading gets to read the answer, then the connection is closed;
 * so it is when the rest comes in too many pieces (overChunkBudget), which
 * would cost far more than its bytes.
 */
export function finishUnreadRequest(req: Req, res: Res, maxDiscardBytes = 8 * 1024 * 1024): void {
  const finish = () => {
    if (closing.has(req)) return;
    if ("stream" in req) {
      if (!req.complete && !req.stream.destroyed && !req.stream.closed) {
        req.stream.close(http2.constants.NGHTTP2_NO_ERROR);
      }
      return;
    }
    if (req.complete || req.destroyed) return;
    let discarded = 0;
    let chunks = 0;
    // An abandoned async iterator (Connect's reader, stopped by an error)
    // keeps a 'readable' listener, which would hold the stream paused.
    req.removeAllListeners("readable");
    req.on("error", noop);
    req.on("data", (chunk: Buffer) => {
      discarded += chunk.length;
      chunks++;
      if (discarded > maxDiscardBytes || overChunkBudget(chunks, discarded)) req.socket.destroy();
    });
    req.resume();
  };
  if ("stream" in req) {
    // The compatibility response emits 'finish' only once the whole stream
    // closes, which a client still sending never lets happen. It always
    // sends its answer with trailers: its stream asks for them once the body
    // is out ('wantTrailers', answered by the response's own listener,
    // registered first), and the reset goes right after.
    req.stream.once("wantTrailers", () => setImmediate(finish));
  } else if (res.writableFinished) {
    finish();
  } else {
    res.once("finish", finish);
  }
}

/** How long a refused connection stays open, unread, before it is closed: time for the client to read the answer. */
export const refusedLingerMs = 2_000;

/**
 * Ends a request refused for the way its body arrives (too slow, in too
 * many pieces), where reading on is the very cost refused. HTTP/2: the
 * stream is reset once answered, as above. HTTP/1.1: nothing more is read
 * (the request stays paused, so the socket stops reading and the client's
 * writes back up), and the connection is closed `lingerMs` after the
 * answer. Closing at once would reset a connection with unread bytes, and
 * a reset can destroy the answer before the client reads it.
 */
export function closeUnreadRequest(req: Req, res: Res, lingerMs = refusedLingerMs): void {
  if ("stream" in req) {
    finishUnreadRequest(req, res, 0);
    return;
  }
  closing.add(req);
  req.pause();
  const socket = req.socket;
  const close = () => {
    const timer = setTimeout(() => socket.destroy(), lingerMs);
    socket.once("close", () => clearTimeout(timer));
  };
  if (res.writableFinished) close();
  else res.once("finish", close);
}
