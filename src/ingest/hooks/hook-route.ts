import type { Clock } from "../../clock.js";
import type { Queryable } from "../../db/pool.js";
import type { BodyTiming } from "../../http/request-body.js";
import type { Req, Res, RouteHandler } from "../../http/types.js";
import { closeUnreadRequest, finishUnreadRequest } from "../../http/unread-body.js";
import type { Logger } from "../../logger.js";
import type { Metrics } from "../../metrics.js";
import { limits } from "../limits.js";
import { closesConnection, declaredLength, HookClientGone, HookRefusal, readHookBody, tooLarge } from "./hook-body.js";
import { createHookRateLimiter, type HookRateLimiter } from "./hook-rate-limit.js";
import { createHookSourceLookup, type HookSourceLookup } from "./hook-source-lookup.js";
import { createHookStore, type HookStore } from "./hook-store.js";
import { headersToStore, jsonOf, traceContextOf } from "./hook-request-fields.js";
import { hookSettingsFromStored, type HookSettings } from "./hook-settings.js";
import { hashHookToken } from "./hook-token.js";
import { idempotencyKeyOf, verifyHookHeaders, verifyHookRequest } from "./verifiers.js";

export interface HookRouteOptions {
  pool: Queryable;
  clock: Clock;
  logger: Pick<Logger, "debug" | "warn">;
  metrics: Pick<Metrics, "hookRequests">;
  /** The deadline and minimum rate of a body (else 408). */
  bodies: BodyTiming;
  /**
   * Called after a request was committed as pending (not for duplicates),
   * so the processor can start at once instead of at its next poll.
   */
  onHookRequestStored?: ((sourceId: string) => void) | undefined;
}

const prefix = "/hooks/";
/** After a refusal, at most this much of the rest is read and dropped before the connection is cut. */
const maxDiscardBytes = 16 * limits.maxHookBodyBytes;
/** How long a sender is asked to wait after a database error. */
const unavailableRetryAfterSeconds = 5;

/**
 * The inbound URL of webhook sources, `POST /hooks/<token>`
 * (docs/webhook-sources.md#the-inbound-url). What is cheap and needs no
 * body comes first: the method, the token (looked up by its hash, never
 * cached), the rate limit, a declared size. Only then is the body read,
 * bounded in size and time, verified, and committed to hook_requests
 * before the answer. Every failure has its own 4xx, and a database error a
 * 503 the sender retries: never a 500, which sets off retry storms.
 */
export function createHookRoute(options: HookRouteOptions): RouteHandler {
  const rateLimiter = createHookRateLimiter({ clock: options.clock });
  const store = createHookStore({ pool: options.pool });
  const lookup = createHookSourceLookup({ pool: options.pool });
  return async (req, res, path) => {
    if (path !== "/hooks" && !path.startsWith(prefix)) return false;
    // The source, once known, labels the metric of a refusal too.
    const known = { sourceId: "" };
    try {
      await receive(options, { rateLimiter, store, lookup }, req, res, path.slice(prefix.length), known);
    } catch (error) {
      refuse(options, req, res, known.sourceId, error);
    }
    return true;
  };
}

async function receive(
  options: HookRouteOptions,
  { rateLimiter, store, lookup }: { rateLimiter: HookRateLimiter; store: HookStore; lookup: HookSourceLookup },
  req: Req,
  res: Res,
  token: string,
  known: { sourceId: string },
): Promise<void> {
  if (req.method !== "POST") {
    throw new HookRefusal(405, "method_not_allowed", `${String(req.method).slice(0, 20)} is not allowed here: use POST`, {
      allow: "POST",
    });
  }
  // A token is base64url; anything else (or nothing) is unknown without asking the database.
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(token)) throw unknownHook();
  const source = await unavailableOnError(() => lookup.find(hashHookToken(token)));
  if (!source) throw unknownHook();
  known.sourceId = source.id;
  const settings = hookSettingsFromStored(source.webhook);

  const limit = settings.maxRequestsPerSecond;
  // What the headers decide comes before the body: a request without its
  // signature is refused here, and spends only the refused bucket.
  const early = verifyHookHeaders(settings, req.headers, options.clock.now());
  if (early && !early.ok) throw refusedByVerifier(rateLimiter, source.id, limit, early.reason);
  // The sender's own bucket empty: no body to read.
  const room = rateLimiter.peek(source.id, limit);
  if (!room.ok) throw rateLimited(limit, room.retryAfterSeconds);
  const encoding = String(req.headers["content-encoding"] ?? "")
    .trim()
    .toLowerCase();
  if (encoding !== "" && encoding !== "identity") {
    throw new HookRefusal(
      415,
      "unsupported_encoding",
      `Content-Encoding "${encoding.slice(0, 40)}" is not supported: send the body uncompressed`,
    );
  }
  if ((declaredLength(req) ?? 0) > limits.maxHookBodyBytes) throw tooLarge(limits.maxHookBodyBytes);
  const body = await readHookBody(req, { limit: limits.maxHookBodyBytes, timing: options.bodies });

  const verdict = early ?? verify(settings, req, body, options.clock.now());
  if (!verdict.ok) throw refusedByVerifier(rateLimiter, source.id, limit, verdict.reason);
  // Taken only now, so that no refused request spends the sender's bucket.
  const rate = rateLimiter.take(source.id, limit);
  if (!rate.ok) throw rateLimited(limit, rate.retryAfterSeconds);

  const stored = await unavailableOnError(() =>
    store.store({
      sourceId: source.id,
      receivedAt: options.clock.now(),
      method: "POST",
      query: queryOf(req),
      contentType: String(req.headers["content-type"] ?? ""),
      headers: headersToStore(req.headers, settings),
      body,
      idempotencyKey: idempotencyKey(settings, req, body),
      ...traceContextOf(req.headers),
    }),
  );
  options.metrics.hookRequests.inc({ source_id: source.id, result: stored.duplicate ? "duplicate" : "accepted" });
  if (!stored.duplicate) options.onHookRequestStored?.(source.id);
  // A duplicate gets the same answer: the sender only needs to stop resending.
  send(res, settings.response.status, settings.response.contentType, settings.response.body);
}

/** The verifier's verdict; a verifier that throws (a malformed setting) is a refusal, never a 500. */
function verify(settings: HookSettings, req: Req, body: Buffer, now: Date): { ok: true } | { ok: false; reason: string } {
  try {
    return verifyHookRequest(settings, { headers: req.headers, body, now });
  } catch (error) {
    return {
      ok: false,
      reason: `the request could not be verified: ${error instanceof Error ? error.message : String(error)}`.slice(0, 200),
    };
  }
}

function idempotencyKey(settings: HookSettings, req: Req, body: Buffer): string | undefined {
  // The body is parsed only when the key is in it (a JSON path, or Stripe's default `$.id`).
  const inBody = settings.idempotencyKey ? settings.idempotencyKey.startsWith("$.") : settings.verifier === "stripe";
  try {
    return idempotencyKeyOf(settings, req.headers, inBody ? jsonOf(body, req.headers["content-type"]) : undefined);
  } catch {
    // No key is the safe side: the request is stored and processed once.
    return undefined;
  }
}

function rateLimited(limit: number, retryAfterSeconds: number): HookRefusal {
  return new HookRefusal(429, "rate_limited", `over this source's limit of ${limit} requests per second`, {
    "retry-after": String(retryAfterSeconds),
  });
}

/**
 * A 401 with the verifier's reason, counted in the source's bucket of
 * refused requests: past the limit there, a 429 (still saying why), so a
 * flood of them is bounded without touching the sender's bucket.
 */
function refusedByVerifier(limiter: HookRateLimiter, sourceId: string, limit: number, reason: string): HookRefusal {
  const rate = limiter.take(sourceId, limit, "refused");
  if (rate.ok) return new HookRefusal(401, "unauthorized", reason);
  return new HookRefusal(429, "rate_limited", `over this source's limit of ${limit} refused requests per second: ${reason}`, {
    "retry-after": String(rate.retryAfterSeconds),
  });
}

function queryOf(req: Req): string {
  const url = req.url ?? "";
  const at = url.indexOf("?");
  return at < 0 ? "" : url.slice(at + 1);
}

function unknownHook(): HookRefusal {
  return new HookRefusal(404, "not_found", "unknown hook");
}

/** A database error is a 503 with Retry-After: the sender keeps the request and sends it again. */
async function unavailableOnError<T>(query: () => Promise<T>): Promise<T> {
  try {
    return await query();
  } catch (error) {
    throw new HookRefusal(
      503,
      "unavailable",
      "the request could not be stored now: retry it",
      {
        "retry-after": String(unavailableRetryAfterSeconds),
      },
      { cause: error },
    );
  }
}

function refuse(options: HookRouteOptions, req: Req, res: Res, sourceId: string, error: unknown): void {
  if (error instanceof HookClientGone) {
    options.metrics.hookRequests.inc({ source_id: sourceId, result: "client_gone" });
    options.logger.debug({ sourceId }, error.message);
    return;
  }
  const refusal =
    error instanceof HookRefusal
      ? error
      : new HookRefusal(503, "unavailable", "the request could not be stored now: retry it", {
          "retry-after": String(unavailableRetryAfterSeconds),
        });
  if (refusal.status === 503) options.logger.warn({ err: refusal.cause ?? error, sourceId }, "a webhook request could not be stored");
  options.metrics.hookRequests.inc({ source_id: sourceId, result: refusal.result });
  if (!res.headersSent) {
    send(res, refusal.status, "application/json", JSON.stringify({ accepted: false, error: refusal.message }), refusal.headers);
  }
  if (closesConnection(refusal)) closeUnreadRequest(req, res);
  else finishUnreadRequest(req, res, maxDiscardBytes);
}

function send(res: Res, status: number, contentType: string, body: string, headers: Record<string, string> = {}): void {
  const bytes = Buffer.from(body);
  res.writeHead(status, { ...headers, "content-type": contentType, "content-length": String(bytes.length) });
  res.end(bytes);
}
