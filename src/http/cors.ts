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

/** What a tracking call from a page sends: the Connect protocol's headers and the write key. */
const allowedHeaders = [
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
].join(", ");

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
      if (value === undefined || method !== "POST") {
        const why = !isCorsPath(path)
          ? `${path} is not open to other origins: only the tracking API (TrackingService, /v1/*) is`
          : value === undefined
            ? `origin ${origin} is not in WAYPOST_CORS_ORIGINS`
            : `method ${method} is not allowed: the tracking API takes POST`;
        res.writeHead(403, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: why }));
        return true;
      }
      res.writeHead(204, {
        "access-control-allow-origin": value,
        "access-control-allow-methods": "POST",
        "access-control-allow-headers": allowedHeaders,
        "access-control-max-age": maxAge,
      });
      res.end();
      return true;
    },
  };
}

function header(req: Req, name: string): string | undefined {
  const value = req.headers[name];
  const text = Array.isArray(value) ? value[0] : value;
  return text === undefined || text === "" ? undefined : text;
}
