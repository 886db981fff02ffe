import { AsyncLocalStorage } from "node:async_hooks";
import { createRequire } from "node:module";
import path from "node:path";
import { gunzipSync, inflateSync } from "node:zlib";
import type { Dispatcher } from "undici";
import { errorCode, withoutNul } from "../outbound/send.js";
import { userAgent } from "../outbound/user-agent.js";

// QUIRK, made here and nowhere else: the catalog's request client
// (@segment/actions-core's request-client.js) sends every request with
// `fetch_1.default(request)`, read at call time from its own fetch module,
// which is node-fetch through cross-fetch. That client opens a new TLS
// connection per request, knows nothing of Waypost's address guard,
// proxies or time limits, and calls `agent.destroy()` after each response
// when it is given an agent. Rather than hand it agents, Waypost replaces
// that module's `default` export (once, when the integration kind's
// delivery half is created: installCatalogFetch) with a fetch that sends the
// node-fetch Request through the destination's undici client and records
// it. Outside a call's context (withVendorContext) the catalog's own fetch
// runs, as shipped. An upgrade of actions-core that stops reading the
// export at call time breaks this: test/catalog/catalog-fetch.test.ts
// checks it.
const require = createRequire(import.meta.url);

type NodeFetchHeaders = { forEach(fn: (value: string, key: string) => void): void; raw?(): Record<string, string[]> };
type NodeFetchRequest = {
  method: string;
  url: string;
  headers: NodeFetchHeaders;
  signal?: AbortSignal | null;
  arrayBuffer(): Promise<ArrayBuffer>;
};
type FetchModule = {
  default: (request: NodeFetchRequest) => Promise<unknown>;
  Response: new (body: Buffer, init: { status: number; statusText?: string; headers: Array<[string, string]>; url: string }) => unknown;
};

/** One request an action made, as the attempt log and TestDestination show it. */
export interface VendorRequestRecord {
  method: string;
  /** Secret query values masked. */
  url: string;
  /** Request headers, secrets masked. */
  headers: Record<string, string>;
  body: string;
  attemptedAt: Date;
  /** null: no answer (an error). */
  status: number | null;
  error: string | null;
  /** The error object, when the request failed without an answer (its code classifies it). */
  cause?: unknown;
  latencyMs: number;
  /** The first KB of the answer. */
  responseBody: string | null;
  retryAfter?: string | undefined;
}

/** Where the requests of one action run go, and how. */
export interface VendorContext {
  /** Sends through the destination's undici client (DeliveryContext.http bound to the destination). */
  send?: <T>(use: (dispatcher: Dispatcher) => Promise<T>) => Promise<T>;
  /** Record, answer 200 `{}`, send nothing (TestDestination). */
  dryRun?: boolean;
  /** Values (secret settings) masked wherever they appear in a recorded URL or header. */
  secrets: readonly string[];
  /** Every request of the run, in the order they were made. */
  requests: VendorRequestRecord[];
  now: () => Date;
}

const storage = new AsyncLocalStorage<VendorContext>();

/** Runs `fn` (an action) with its requests going through `context`. */
export function withVendorContext<T>(context: VendorContext, fn: () => Promise<T>): Promise<T> {
  return storage.run(context, fn);
}

const recordedBytes = 1024;
/** A larger answer is cut here: actions read JSON answers of a few KB. */
const maxResponseBytes = 4 * 1024 * 1024;
/** As responses mask secrets (the settings' own mask). */
export const masked = "***";

let installed = false;

/** Replaces the catalog's fetch (idempotent). See the note at the top of this file. */
export function installCatalogFetch(): void {
  if (installed) return;
  // The package's exports do not list the file: it is found beside the CommonJS index, by path (the
  // same module object request-client.js holds: CommonJS caches modules by file name).
  const module = require(path.join(path.dirname(require.resolve("@segment/actions-core")), "fetch.js")) as FetchModule;
  const original = module.default;
  module.default = (request) => {
    const context = storage.getStore();
    return context ? waypostFetch(module, request, context) : original(request);
  };
  installed = true;
}

/** An error of the transport (no answer): its code classifies it as a connection error. */
export class VendorTransportError extends Error {
  override name = "VendorTransportError";
  constructor(
    message: string,
    readonly code: string | undefined,
    override readonly cause: unknown,
  ) {
    super(message);
  }
}

async function waypostFetch(module: FetchModule, request: NodeFetchRequest, context: VendorContext): Promise<unknown> {
  const headers: Record<string, string> = {};
  request.headers.forEach((value, key) => {
    headers[key] = value;
  });
  // What node-fetch adds when it sends (the conformance tests compare with it), keep-alive aside.
  headers.accept ??= "*/*";
  headers["accept-encoding"] ??= "gzip,deflate";
  headers["user-agent"] ??= userAgent;
  const body = request.method === "GET" || request.method === "HEAD" ? Buffer.alloc(0) : Buffer.from(await request.arrayBuffer());
  const record: VendorRequestRecord = {
    method: request.method,
    url: maskUrl(request.url, context.secrets),
    headers: maskHeaders(headers, context.secrets),
    // Shown by TestDestination: a secret the action puts in the body is masked there too.
    body: maskText(body.toString("utf8"), context.secrets),
    attemptedAt: context.now(),
    status: null,
    error: null,
    latencyMs: 0,
    responseBody: null,
  };
  context.requests.push(record);
  if (context.dryRun || !context.send) {
    record.status = 200;
    record.responseBody = "{}";
    return new module.Response(Buffer.from("{}"), { status: 200, headers: [["content-type", "application/json"]], url: request.url });
  }
  const started = performance.now();
  const target = new URL(request.url);
  try {
    const answer = await context.send((dispatcher) =>
      dispatcher
        .request({
          origin: target.origin,
          path: target.pathname + target.search,
          method: request.method as Dispatcher.HttpMethod,
          headers,
          body: body.length > 0 ? body : null,
          signal: request.signal ?? undefined,
        })
        .then(async (response) => ({ response, bytes: await readCapped(response.body) })),
    );
    const { response } = answer;
    const responseHeaders: Array<[string, string]> = [];
    for (const [key, value] of Object.entries(response.headers)) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) responseHeaders.push([key, v]);
    }
    const bytes = decoded(answer.bytes, response.headers["content-encoding"]);
    record.status = response.statusCode;
    record.latencyMs = Math.round(performance.now() - started);
    record.responseBody = maskText(withoutNul(bytes.subarray(0, recordedBytes).toString("utf8")), context.secrets);
    const retryAfter = response.headers["retry-after"];
    record.retryAfter = Array.isArray(retryAfter) ? retryAfter[0] : retryAfter;
    return new module.Response(bytes, {
      status: response.statusCode,
      // node-fetch's Response wants no encoding header for a body it did not decode.
      headers: responseHeaders.filter(([key]) => key !== "content-encoding" && key !== "content-length"),
      url: request.url,
    });
  } catch (error) {
    record.latencyMs = Math.round(performance.now() - started);
    record.cause = error;
    const code = errorCode(error);
    const message = error instanceof Error ? error.message : String(error);
    record.error = withoutNul(code ? `${code}: ${message}` : message);
    // An abort keeps its name: the catalog's client turns an AbortError into its own timeout error.
    if ((error as { name?: string })?.name === "AbortError" || request.signal?.aborted) throw error;
    throw new VendorTransportError(message, code, error);
  }
}

async function readCapped(body: AsyncIterable<Buffer> & { destroy?(error?: Error): unknown }): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const left = maxResponseBytes - size;
    chunks.push(left < chunk.length ? chunk.subarray(0, left) : chunk);
    size += Math.min(left, chunk.length);
    if (size >= maxResponseBytes) {
      body.destroy?.();
      break;
    }
  }
  return Buffer.concat(chunks);
}

function decoded(bytes: Buffer, encoding: string | string[] | undefined): Buffer {
  const value = (Array.isArray(encoding) ? encoding[0] : encoding)?.trim().toLowerCase();
  try {
    // Bounded like the body read: a small compressed answer must not inflate without limit.
    if (value === "gzip" || value === "x-gzip") return gunzipSync(bytes, { maxOutputLength: maxResponseBytes });
    if (value === "deflate") return inflateSync(bytes, { maxOutputLength: maxResponseBytes });
  } catch {
    // A body cut at the cap, one that inflates past it, or not what it says it is: handed over as received.
  }
  return bytes;
}

/** The URL with every query value that is a secret (or contains one) masked. */
export function maskUrl(url: string, secrets: readonly string[]): string {
  if (secrets.length === 0) return url;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return maskText(url, secrets);
  }
  let changed = false;
  for (const [key, value] of [...parsed.searchParams]) {
    if (containsSecret(value, secrets)) {
      parsed.searchParams.set(key, masked);
      changed = true;
    }
  }
  const result = changed ? parsed.toString() : url;
  // A secret in the path (some vendors put keys there).
  return maskText(result, secrets);
}

/** Headers with Authorization and every value holding a secret masked. */
export function maskHeaders(headers: Record<string, string>, secrets: readonly string[]): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [key, value] of Object.entries(headers)) {
    const lower = key.toLowerCase();
    result[key] = lower === "authorization" || lower === "proxy-authorization" || containsSecret(value, secrets) ? masked : value;
  }
  return result;
}

function containsSecret(value: string, secrets: readonly string[]): boolean {
  for (const secret of secrets) if (secret.length >= 4 && value.includes(secret)) return true;
  return false;
}

/** Text (a URL, a response) with every secret replaced. */
export function maskText(text: string, secrets: readonly string[]): string {
  let result = text;
  for (const secret of secrets) {
    if (secret.length < 4) continue;
    if (result.includes(secret)) result = result.replaceAll(secret, masked);
    const encoded = encodeURIComponent(secret);
    if (encoded !== secret && result.includes(encoded)) result = result.replaceAll(encoded, masked);
  }
  return result;
}
