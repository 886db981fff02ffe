import { InvalidInputError, NotFoundError } from "../errors.js";
import { sendJson } from "../http/operational-routes.js";
import type { Req, Res } from "../http/types.js";

/**
 * Machine-readable error codes of the compatible API. The body of every error
 * is `{"success":false,"code":<one of these>,"message":<text>}`: `code` and
 * `message` are the two keys Segment's Python library reads from an error
 * body, so its logs show our reason instead of "unknown".
 */
export type CompatErrorCode =
  | "invalid_json"
  | "invalid_encoding"
  | "invalid_request"
  | "invalid_message"
  | "unauthorized"
  | "not_found"
  | "method_not_allowed"
  | "request_too_large"
  | "request_too_fragmented"
  | "request_too_slow"
  | "unsupported_encoding"
  | "internal";

/** A request-level failure that maps to one HTTP status and error body. */
export class CompatError extends Error {
  constructor(
    readonly status: number,
    readonly code: CompatErrorCode,
    message: string,
    /** Extra keys for the error body (the rejected list of a batch). */
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "CompatError";
  }
}

/**
 * The one place domain errors become the compatible API's error shape; a
 * CompatError passes as it is, anything else is not ours to explain.
 */
export function toCompatError(error: unknown): CompatError | undefined {
  if (error instanceof CompatError) return error;
  if (error instanceof InvalidInputError) return new CompatError(400, "invalid_request", error.message);
  if (error instanceof NotFoundError) return new CompatError(404, "not_found", error.message);
  return undefined;
}

/** The client went away mid-request: there is nobody to answer. */
export class ClientGoneError extends Error {
  constructor() {
    super("client disconnected before the request body was complete");
    this.name = "ClientGoneError";
  }
}

/**
 * Browsers (Segment's analytics.js) post to this API cross-origin. A request
 * from a page carries Origin, and src/http/cors.ts has already given it the
 * CORS headers WAYPOST_CORS_ORIGINS allows (none for an origin left out), so
 * that decision stands. Only requests without Origin (not from a page) get
 * the blanket `*`, which changes nothing for them.
 */
export function setCorsHeaders(req: Req, res: Res): void {
  if (req.headers.origin !== undefined) return;
  res.setHeader("access-control-allow-origin", "*");
}

/**
 * Answers an OPTIONS that src/http/cors.ts left to this API: one without
 * Origin or Access-Control-Request-Method, so not a browser's preflight
 * (those are answered or refused there, before any route).
 */
export function sendPreflight(req: Req, res: Res): void {
  const requested = req.headers["access-control-request-headers"];
  setCorsHeaders(req, res);
  res.setHeader("access-control-allow-methods", "POST, OPTIONS");
  res.setHeader(
    "access-control-allow-headers",
    typeof requested === "string" && requested.length <= 1024 ? requested : "Content-Type, Authorization",
  );
  res.setHeader("access-control-max-age", "86400");
  res.writeHead(204);
  res.end();
}

/**
 * Writes a JSON answer unless the response is already gone. A client that
 * disconnected must never turn into an exception here: the data it sent is
 * either committed or was never acknowledged.
 */
export function sendCompat(res: Res, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.writableEnded || isGone(res)) return;
  try {
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    sendJson(res, status, body);
  } catch {
    // The stream closed between the check and the write (HTTP/2 resets).
  }
}

function isGone(res: Res): boolean {
  return "stream" in res ? res.stream.destroyed || res.stream.closed : res.destroyed;
}

export function sendCompatError(res: Res, error: CompatError, headers: Record<string, string> = {}): void {
  sendCompat(res, error.status, { success: false, code: error.code, message: error.message, ...error.extra }, headers);
}
