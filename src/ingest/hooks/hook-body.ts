import { BodyClientGone, BodyRefusal, readRequestBody, type BodyRefusalReason, type BodyTiming } from "../../http/request-body.js";
import type { Req } from "../../http/types.js";

export { declaredLength } from "../../http/request-body.js";

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

export function tooLarge(limit: number): HookRefusal {
  return new HookRefusal(413, "too_large", `request body is over the limit of ${limit} bytes (${limit / 1024} KB)`);
}

/** Refused for the way the body arrives: nothing more is read, and the connection is closed. */
export function closesConnection(refusal: HookRefusal): boolean {
  return refusal.result === "timeout" || refusal.result === "too_fragmented";
}

/** The metric's `result` of each body refusal. */
const results: Record<BodyRefusalReason, string> = { too_large: "too_large", too_fragmented: "too_fragmented", too_slow: "timeout" };

/**
 * Reads the body as sent, within `limit` bytes (with or without a
 * Content-Length) and the piece count and timing of readRequestBody: a
 * sender trickling a byte a second, or sending one-byte chunks, holds a
 * connection and a buffer for a bounded time and work. A refusal is a
 * HookRefusal (413, 408; see closesConnection); the sender's going away,
 * HookClientGone. On a refusal the
 * request is left paused; the caller answers and then drops the rest.
 */
export async function readHookBody(req: Req, options: { limit: number; timing: BodyTiming }): Promise<Buffer> {
  try {
    return await readRequestBody(req, { ...options.timing, maxBytes: options.limit });
  } catch (error) {
    if (error instanceof BodyClientGone) throw new HookClientGone();
    if (!(error instanceof BodyRefusal)) throw error;
    if (error.reason === "too_large") throw tooLarge(options.limit);
    throw new HookRefusal(error.status, results[error.reason], error.message);
  }
}
