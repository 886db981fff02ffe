import type { Req } from "../../http/types.js";

/**
 * A request the inbound URL refuses: its status, the one-line reason sent
 * back, and the metric's `result` label.
 */
export class HookRefusal extends Error {
  constructor(
    readonly status: number,
    readonly result: string,
    message: string,
    readonly headers: Record<string, string> = {},
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The sender went away mid-body: nobody to answer, nothing stored. */
export class HookClientGone extends Error {
  constructor() {
    super("the client disconnected before the body was complete");
  }
}

const noop = () => {};

export function tooLarge(limit: number): HookRefusal {
  return new HookRefusal(413, "too_large", `request body is over the limit of ${limit} bytes (${limit / 1024} KB)`);
}

/** Content-Length when the sender declared one (absent with chunked uploads). */
export function declaredLength(req: Req): number | undefined {
  const header = req.headers["content-length"];
  if (typeof header !== "string" || !/^\d+$/.test(header.trim())) return undefined;
  return Number(header.trim());
}

/**
 * Reads the body as sent, refusing it (413) as soon as the bytes received
 * pass `limit`, with or without a Content-Length, and (408) when it is not
 * complete `timeoutMs` after the headers: a sender trickling a byte a second
 * holds a connection and a buffer for at most that long. Rejects with
 * HookClientGone when the sender disconnects. On a refusal the request is
 * left paused; the caller answers and then drops the rest.
 */
export function readHookBody(req: Req, options: { limit: number; timeoutMs: number }): Promise<Buffer> {
  if (req.destroyed || ("aborted" in req && req.aborted)) return Promise.reject(new HookClientGone());
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let ended = false;
    let settled = false;

    const finish = (error?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("close", onClose);
      if (error) {
        req.pause();
        reject(error);
      } else {
        resolve(Buffer.concat(chunks, size));
      }
    };
    const onData = (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > options.limit) return finish(tooLarge(options.limit));
      chunks.push(chunk);
    };
    const onEnd = () => {
      ended = true;
      finish();
    };
    const onClose = () => {
      if (!ended) finish(new HookClientGone());
    };
    const timer = setTimeout(
      () =>
        finish(new HookRefusal(408, "timeout", `request body was not complete within ${options.timeoutMs} ms`, { connection: "close" })),
      options.timeoutMs,
    );

    // Errors of an aborted request are reported through 'close'; this only
    // keeps them from surfacing as unhandled 'error' events.
    req.on("error", noop);
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("close", onClose);
  });
}
