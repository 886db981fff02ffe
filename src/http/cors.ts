import type { Req, Res } from "./types.js";

export interface CorsOptions {
  /**
   * Origins allowed to call the tracking API from a browser
   * (`https://shop.example.com`); undefined allows any origin. Write keys
   * used in pages are public by nature, so any origin is the default.
   */
  origins: readonly string[] | undefined;
  /** How long a browser may cache a preflight's answer. Default 2 hours (Chrome's cap). */
  maxAgeSeconds?: number;
}

export interface Cors {
  /**
   * Applies CORS to a request before it is routed. Answers a preflight
   * (OPTIONS with Access-Control-Request-Method) itself and returns true;
   * on other requests it only adds headers and returns false.
   */
  handle(req: Req, res: Res, path: string): boolean;
}

/**
 * Always allowed on the tracking API: the Connect protocol's headers and the
 * write key. A preflight's answer lists these, so a browser's cached answer
 * covers every Connect call, plus whatever else the preflight asked for.
 */
const baseHeaders = [
  "Authorization",
  "Content-Type",
  "Content-Encoding",
  "Connect-Protocol-Version",
  "Connect-Timeout-Ms",
  "Connect-Content-Encoding",
  "Connect-Accept-Encoding",
  "Grpc-Timeout",
  "X-Grpc-Web",
  "X-User-Agent",
];
const baseHeaderNames = new Set(baseHeaders.map((name) => name.toLowerCase()));

/**
 * Bounds on the Access-Control-Request-Headers a tracking preflight may ask
 * for. Browsers send a short comma list of lowercase names; anything longer
 * or not made of header names is not a browser's preflight, and echoing it
 * would put arbitrary bytes into our answer.
 */
const maxRequestedHeadersLength = 1024;
const maxRequestedHeaders = 32;
/** An HTTP field name: a token (RFC 9110, section 5.1). */
const headerName = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * Response headers a page's script may read beyond the safelisted ones:
 * Retry-After (the client honours it), and the status headers of gRPC-Web.
 */
const exposedHeaders = [
  "Retry-After",
  "Content-Encoding",
  "Connect-Content-Encoding",
  "Grpc-Status",
  "Grpc-Message",
  "Grpc-Status-Details-Bin",
].join(", ");

/**
 * The browser-facing part of the API: TrackingService and the compatible
 * `/v1/*` HTTP API. Admin RPCs, the console and everything else never get
 * CORS headers, and their preflights are refused, so a page on another
 * origin can never drive them with a user's ambient credentials or a token
 * it found.
 */
export function isCorsPath(path: string): boolean {
  return path.startsWith("/waypost.v1.TrackingService/") || path.startsWith("/v1/");
}

/** CORS for the tracking API; see `CorsOptions`. */
export function createCors(options: CorsOptions): Cors {
  const allowed = options.origins === undefined ? undefined : new Set(options.origins);
  const maxAge = String(options.maxAgeSeconds ?? 7200);

  /** The Access-Control-Allow-Origin value for this origin, or undefined when it is not allowed. */
  function allowOrigin(origin: string): string | undefined {
    if (allowed === undefined) return "*";
    return allowed.has(origin) ? origin : undefined;
  }

  return {
    handle(req, res, path) {
      const origin = header(req, "origin");
      const preflight = req.method === "OPTIONS" && header(req, "access-control-request-method") !== undefined;
      if (origin === undefined) return false;
      const value = isCorsPath(path) ? allowOrigin(origin) : undefined;
      if (allowed !== undefined) res.setHeader("Vary", "Origin");
      if (!preflight) {
        if (value !== undefined) {
          res.setHeader("Access-Control-Allow-Origin", value);
          res.setHeader("Access-Control-Expose-Headers", exposedHeaders);
        }
        return false;
      }
      const method = header(req, "access-control-request-method");
      const requested = value === undefined ? undefined : parseRequestedHeaders(header(req, "access-control-request-headers"));
      if (value === undefined || method !== "POST" || typeof requested === "string") {
        const why = !isCorsPath(path)
          ? `${path} is not open to other origins: only the tracking API (TrackingService, /v1/*) is`
          : value === undefined
            ? `origin ${origin} is not in WAYPOST_CORS_ORIGINS`
            : method !== "POST"
              ? `method ${method} is not allowed: the tracking API takes POST`
              : requested;
        res.writeHead(403, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: why }));
        return true;
      }
      // The answer depends on the requested headers, so a shared cache must
      // not hand one page's answer to a preflight asking for others.
      res.setHeader("Vary", allowed === undefined ? "Access-Control-Request-Headers" : "Origin, Access-Control-Request-Headers");
      res.writeHead(204, {
        "access-control-allow-origin": value,
        "access-control-allow-methods": "POST",
        "access-control-allow-headers": allowHeaders(requested ?? []),
        "access-control-max-age": maxAge,
      });
      res.end();
      return true;
    },
  };
}

/**
 * The header names a preflight asks for, lowercased; or, when the list is
 * not a bounded list of header names, why it is refused.
 */
function parseRequestedHeaders(raw: string | undefined): string[] | string {
  if (raw === undefined) return [];
  if (raw.length > maxRequestedHeadersLength) {
    return `Access-Control-Request-Headers is ${raw.length} characters, over the limit of ${maxRequestedHeadersLength}`;
  }
  const names = raw
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
  if (names.length > maxRequestedHeaders) {
    return `Access-Control-Request-Headers names ${names.length} headers, over the limit of ${maxRequestedHeaders}`;
  }
  const bad = names.find((name) => !headerName.test(name));
  if (bad !== undefined) return `Access-Control-Request-Headers: ${JSON.stringify(bad.slice(0, 64))} is not a header name`;
  return names.map((name) => name.toLowerCase());
}

/**
 * The base headers plus every requested one. Any header is safe to allow
 * here: the tracking API reads only the write key and the Connect headers,
 * and a browser never lets a page set the forbidden ones (Cookie, Host, …)
 * whatever a preflight allows. Refusing others only breaks SDKs that add
 * their own, as analytics.js does with X-Retry-Count on every retry.
 */
function allowHeaders(requested: string[]): string {
  const extra = [...new Set(requested)].filter((name) => !baseHeaderNames.has(name));
  return [...baseHeaders, ...extra].join(", ");
}

function header(req: Req, name: string): string | undefined {
  const value = req.headers[name];
  const text = Array.isArray(value) ? value[0] : value;
  return text === undefined || text === "" ? undefined : text;
}
