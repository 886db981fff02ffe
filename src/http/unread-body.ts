import http2 from "node:http2";
import type { Req, Res } from "./types.js";

const noop = () => {};

/**
 * Ends a request whose answer was sent before its body was read (refused
 * credentials, a message over its size limit); call it any time before the
 * answer ends, it acts once the answer is out. HTTP/2: once the answer is
 * out, the stream is reset with NO_ERROR, which tells the client to stop
 * sending; without it a client blocked on flow control waits forever.
 * HTTP/1.1: up to `maxDiscardBytes` more are read and dropped, so a client
 * still uploading gets to read the answer, then the connection is closed.
 */
export function finishUnreadRequest(req: Req, res: Res, maxDiscardBytes = 8 * 1024 * 1024): void {
  const finish = () => {
    if ("stream" in req) {
      if (!req.complete && !req.stream.destroyed && !req.stream.closed) {
        req.stream.close(http2.constants.NGHTTP2_NO_ERROR);
      }
      return;
    }
    if (req.complete || req.destroyed) return;
    let discarded = 0;
    // An abandoned async iterator (Connect's reader, stopped by an error)
    // keeps a 'readable' listener, which would hold the stream paused.
    req.removeAllListeners("readable");
    req.on("error", noop);
    req.on("data", (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > maxDiscardBytes) req.socket.destroy();
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
