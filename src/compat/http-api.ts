import { parseAuthorization, type Authenticator } from "../api/auth.js";
import type { IngestAdmission } from "../http/ingest-admission.js";
import { callTypes, type Call } from "../calls/call.js";
import type { Ingestor } from "../ingest/ingestor.js";
import { limits } from "../ingest/limits.js";
import type { Logger } from "../logger.js";
import type { BodyTiming } from "../http/request-body.js";
import type { Req, Res, RouteHandler } from "../http/types.js";
import { closeUnreadRequest, finishUnreadRequest } from "../http/unread-body.js";
import { headerText, readTraceContext } from "../tracing/trace-context.js";
import { tracingOff, type RequestSpan, type Tracing } from "../tracing/tracing.js";
import { ClientGoneError, CompatError, sendCompat, sendCompatError, sendPreflight, setCorsHeaders, toCompatError } from "./errors.js";
import { closesConnection, declaredLength, maxDiscardBytes, readBody, tooLarge } from "./read-body.js";
import { parseJsonBody, parseRequest, type Endpoint, type ParsedRequest } from "./parse-request.js";

export interface CompatHttpApiOptions {
  ingestor: Ingestor;
  auth: Authenticator;
  logger: Logger;
  /** The deadline and minimum rate of a request body (the same as /hooks'). */
  bodies: BodyTiming;
  /** Server spans of tracking requests, and the trace context their calls store (absent or off: passed through). */
  tracing?: Tracing | undefined;
  /** Turns for the work of requests whose bodies are in: http/ingest-admission.ts. */
  admission?: IngestAdmission | undefined;
  /** Tried first: routes answering some /v1 paths of their own (analytics.js's settings, the first-party cookie). */
  before?: readonly RouteHandler[] | undefined;
}

/**
 * Paths of the de facto standard tracking API: /v1/<type> for each call
 * type, and /v1/batch. The one-letter paths (a type's first letter, /v1/b)
 * are the ones Segment's browser library (analytics.js) posts to, /v1/b its
 * batching mode; /v1/import is the historical name of /v1/batch.
 */
const endpoints = new Map<string, Endpoint>([
  ...["/v1/batch", "/v1/b", "/v1/import"].map((path): [string, Endpoint] => [path, { kind: "batch" }]),
  ...callTypes.flatMap((type) => [`/v1/${type}`, `/v1/${type[0]}`].map((path): [string, Endpoint] => [path, { kind: "single", type }])),
]);

const allowHeader = { allow: "POST, OPTIONS" };

/**
 * The compatible HTTP API (see docs/api.md): everything under /v1/. After
 * parsing, calls take the RPC API's path: the shared Ingestor validates,
 * dedups, stores and routes them. Status codes and bodies: docs/api.md.
 */
export function createCompatHttpApi(options: CompatHttpApiOptions): RouteHandler {
  return async (req, res, path) => {
    if (path !== "/v1" && !path.startsWith("/v1/")) return false;
    for (const route of options.before ?? []) if (await route(req, res, path)) return true;
    try {
      await handle(options, req, res, withoutTrailingSlashes(path));
    } catch (error) {
      onFailure(options, req, res, error);
    }
    return true;
  };
}

/**
 * "/v1/track///" → "/v1/track" (a lone "/" stays). A loop, not a pattern: the
 * obvious /(.)\/+$/ backtracks over a run of slashes, quadratic in the path.
 */
function withoutTrailingSlashes(path: string): string {
  let end = path.length;
  while (end > 1 && path.charCodeAt(end - 1) === 0x2f) end--;
  return path.slice(0, end);
}

async function handle(options: CompatHttpApiOptions, req: Req, res: Res, path: string): Promise<void> {
  setCorsHeaders(req, res);
  const endpoint = endpoints.get(path);
  if (!endpoint) throw new CompatError(404, "not_found", `no such endpoint: ${path.slice(0, 100)}`);
  if (req.method === "OPTIONS") return sendPreflight(req, res);
  if (req.method !== "POST") {
    throw new CompatError(405, "method_not_allowed", `${String(req.method).slice(0, 20)} is not allowed here: use POST`);
  }
  const span = startRequestSpan(options.tracing, req, path);
  try {
    await accept(options, req, res, endpoint, span);
    span?.end();
  } catch (error) {
    const known = toCompatError(error);
    span?.set({ "http.response.status_code": known?.status ?? 500 });
    span?.end(known?.message ?? "internal error");
    throw error;
  }
}

/**
 * With tracing on, the request's server span (a child of its traceparent);
 * off, the incoming context to store as it came. Undefined when tracing is
 * off and the request carries none: nothing to do.
 */
function startRequestSpan(tracing: Tracing | undefined, req: Req, path: string): RequestSpan | undefined {
  const incoming = readTraceContext(headerText(req.headers.traceparent), headerText(req.headers.tracestate));
  if (!tracing?.enabled && !incoming) return undefined;
  const attributes = { "http.request.method": "POST", "http.route": path, "url.path": path, "http.response.status_code": 200 };
  return (tracing ?? tracingOff).startRequest({ name: `POST ${path}`, incoming, attributes });
}

async function accept(options: CompatHttpApiOptions, req: Req, res: Res, endpoint: Endpoint, span: RequestSpan | undefined) {
  // Refuse before reading a byte when the client says up front that it is too large.
  if ((declaredLength(req) ?? 0) > limits.maxRequestBytes) throw tooLarge();
  // A key in the header is checked before the body is read; a key in the body after.
  const headerKey = parseAuthorization(headerValue(req.headers.authorization));
  const headerSource = headerKey === undefined ? undefined : await authenticate(options, headerKey);
  const body = await readBody(req, options.bodies);
  // A turn once the body is in, for the parsing and storing (http/ingest-admission.ts).
  const leave = await options.admission?.enter();
  try {
    const request = parseRequest(endpoint, parseJsonBody(body));
    const source = headerSource ?? (await authenticate(options, request.writeKey));
    span?.set({ "waypost.source.id": source.id });
    const answer = await submit(options.ingestor, source.id, request, endpoint.kind === "single", span);
    sendCompat(res, 200, answer);
  } finally {
    leave?.();
  }
}

/**
 * The source of a write key, or a 401. When both the Authorization header
 * and the body carry a key, the header decides (a wrong header is not
 * rescued by the body).
 */
async function authenticate(options: CompatHttpApiOptions, writeKey: string | undefined): Promise<{ id: string }> {
  if (!writeKey) {
    throw new CompatError(
      401,
      "unauthorized",
      "missing write key: send it as the Basic auth user name (empty password) or in a writeKey field",
    );
  }
  const source = await options.auth.sourceForWriteKey(writeKey);
  if (!source) throw new CompatError(401, "unauthorized", "unknown write key");
  return source;
}

function headerValue(value: string | string[] | undefined): string | null {
  return typeof value === "string" ? value : null;
}

/**
 * Answers a failed request and drops the rest of its body. Errors other than
 * CompatError are ours: logged and answered 500, which the SDKs retry; the
 * calls of that request were not acknowledged, so a retry loses nothing and
 * dedup absorbs a retry of anything that did commit.
 */
function onFailure(options: CompatHttpApiOptions, req: Req, res: Res, error: unknown): void {
  if (error instanceof ClientGoneError) {
    options.logger.debug({ method: req.method, path: req.url }, error.message);
    return;
  }
  const known = toCompatError(error);
  // Too slow or in too many pieces: reading on is the cost refused, so the connection goes.
  const closing = known !== undefined && closesConnection(known);
  if (known) {
    sendCompatError(res, known, known.status === 405 ? allowHeader : {});
  } else {
    options.logger.error({ err: error, path: req.url }, "compatible API request failed");
    sendCompatError(res, new CompatError(500, "internal", "internal error: the request was not stored, retry it"));
  }
  if (closing) closeUnreadRequest(req, res);
  else finishUnreadRequest(req, res, maxDiscardBytes);
}

interface Rejection {
  /** Position in the request's `batch` (0 for a single-message endpoint). */
  index: number;
  /** The field at fault, as named in JSON ("userId", "timestamp", "message"...). */
  field: string;
  reason: string;
}

/** The success answer: exactly `{"success":true}` when every message was accepted. */
type SubmitAnswer = { success: true; accepted?: number; rejected?: Rejection[]; rejectedCount?: number };

/**
 * A partly rejected batch lists at most this many rejections: listing them
 * all would turn a small request into a large response. `rejectedCount`
 * always has the total.
 */
const maxListedRejections = limits.maxListedRejections;

/**
 * Hands the parsed messages to the shared Ingestor (the same validation,
 * dedup, storage and routing as the RPC API) and decides the answer:
 *
 * - everything accepted: 200 `{"success":true}`;
 * - some accepted, some rejected: 200 with `accepted` and `rejected`: the
 *   accepted ones are committed, so the client must not resend the batch;
 * - everything rejected (or the single message of /v1/track etc.): a 400
 *   CompatError naming the first problem, e.g.
 *   `batch[2].userId: userId or anonymousId is required for track`.
 *
 * Resolves only after the Ingestor's statement has committed.
 */
async function submit(
  ingestor: Ingestor,
  sourceId: string,
  request: ParsedRequest,
  single: boolean,
  span: RequestSpan | undefined,
): Promise<SubmitAnswer> {
  const rejections = await ingestValid(ingestor, sourceId, request, span);
  const total = request.messages.length;
  span?.set({ "waypost.calls.accepted": total - rejections.length, "waypost.calls.rejected": rejections.length });
  if (rejections.length === 0) return { success: true };
  const first = rejections[0]!;
  if (single) throw new CompatError(400, "invalid_message", `${first.field}: ${first.reason}`);
  const listed = rejections.slice(0, maxListedRejections);
  const firstProblem = `batch[${first.index}].${first.field}: ${first.reason}`;
  if (rejections.length === total) {
    throw new CompatError(
      400,
      "invalid_message",
      total === 1 ? firstProblem : `all ${total} messages were rejected; the first: ${firstProblem}`,
      { rejected: listed, rejectedCount: rejections.length },
    );
  }
  return { success: true, accepted: total - rejections.length, rejected: listed, rejectedCount: rejections.length };
}

/** Ingests the messages that parsed; returns every rejection by request index. */
async function ingestValid(
  ingestor: Ingestor,
  sourceId: string,
  request: ParsedRequest,
  span: RequestSpan | undefined,
): Promise<Rejection[]> {
  const rejections: Rejection[] = [];
  const valid: Array<{ call: Call; index: number }> = [];
  request.messages.forEach((message, index) => {
    if (message.call) valid.push({ call: message.call, index });
    else rejections.push({ index, field: message.problem.field, reason: message.problem.reason });
  });
  if (valid.length > 0) {
    const result = await ingestor.ingest(
      sourceId,
      valid.map((v) => v.call),
      { trace: span?.stored },
    );
    for (const rejected of result.rejected) {
      rejections.push({ index: valid[rejected.index]!.index, field: rejected.field, reason: rejected.reason });
    }
  }
  return rejections.sort((a, b) => a.index - b.index);
}
