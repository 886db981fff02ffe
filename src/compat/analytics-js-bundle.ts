import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { gzipSync } from "node:zlib";
import type { Req, Res, RouteHandler } from "../http/types.js";

/**
 * Segment's analytics.js, served by Waypost so that a page loads it from the
 * same host it sends to (docs/first-party-collection.md): the standalone
 * bundle of the pinned `@segment/analytics-next` at the path the stock
 * snippet asks its CDN for, and the chunks that bundle loads at run time.
 */

/** Where the stock snippet loads the bundle from (`<cdn>/analytics.js/v1/<writeKey>/analytics.min.js`). */
const bundlePath = /^\/analytics\.js\/v1\/([^/]{1,200})\/analytics\.min\.js$/;
/** Where the bundle loads its chunks from: its public path is `<cdn>/analytics-next/bundles/`. */
const chunkPrefix = "/analytics-next/bundles/";
/** A chunk's file name: its content hash is in the name, so it never changes. */
const chunkName = /^[\w-]+\.bundle\.[0-9a-f]{8,}\.js$/;

/**
 * The bundle finds its CDN (where settings and chunks come from) in the
 * snippet's script tag, but only for https URLs; elsewhere (plain http on
 * a private network, a test on loopback) it falls back to Segment's CDN.
 * Run first, this sets the CDN to wherever the bundle was loaded from,
 * unless the page set `_cdn` itself.
 */
const prologue = `!function(){try{var s=document.currentScript,k=s&&s.getAttribute("data-global-segment-analytics-key")||"analytics",a=window[k],i=s?s.src.indexOf("/analytics.js/v1/"):-1;if(a&&!a._cdn&&i>0)a._cdn=s.src.slice(0,i)}catch(e){}}();\n`;

export interface Asset {
  body: Buffer;
  /** The body gzipped, for the files worth it. */
  gzipped?: Buffer | undefined;
  etag: string;
  cacheControl: string;
}

export interface AnalyticsJsOptions {
  /** The directory of the package's standalone build; the installed `@segment/analytics-next` by default. */
  umdDirectory?: string;
}

/** The installed `@segment/analytics-next`'s version and its standalone build's directory. */
export function analyticsNextPackage(): { version: string; umdDirectory: string } {
  const require = createRequire(import.meta.url);
  const manifest = require.resolve("@segment/analytics-next/package.json");
  const { version } = JSON.parse(readFileSync(manifest, "utf8")) as { version: string };
  return { version, umdDirectory: path.join(path.dirname(manifest), "dist", "umd") };
}

/**
 * GET/HEAD for the bundle and its chunks. The files are read and
 * compressed once, when the route is made: a request costs a map lookup.
 */
export function createAnalyticsJsRoute(options: AnalyticsJsOptions = {}): RouteHandler {
  const directory = options.umdDirectory ?? analyticsNextPackage().umdDirectory;
  // The bundle's URL holds no version, so caches check back after 5 minutes (an ETag makes that cheap).
  const bundle = asset(Buffer.concat([Buffer.from(prologue), readFileSync(path.join(directory, "standalone.js"))]), "public, max-age=300");
  const chunks = new Map<string, Asset>();
  for (const name of readdirSync(directory)) {
    if (chunkName.test(name)) chunks.set(name, asset(readFileSync(path.join(directory, name)), "public, max-age=31536000, immutable"));
  }
  return async (req, res, urlPath) => {
    const found = bundlePath.test(urlPath)
      ? bundle
      : urlPath.startsWith(chunkPrefix)
        ? chunks.get(urlPath.slice(chunkPrefix.length))
        : undefined;
    if (found === undefined) {
      if (!urlPath.startsWith(chunkPrefix)) return false;
      sendText(res, 404, `no such file: ${urlPath.slice(0, 200)}`);
      return true;
    }
    sendAsset(req, res, found, "text/javascript; charset=utf-8");
    return true;
  };
}

function asset(body: Buffer, cacheControl: string): Asset {
  return { ...textAsset(body, cacheControl), gzipped: gzipSync(body, { level: 9 }) };
}

/** Answers with the asset (gzipped when the client takes it), a 304 when the client has it, a 405 for other methods. */
export function sendAsset(req: Req, res: Res, found: Asset, contentType: string): void {
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain" });
    res.end(`${String(req.method).slice(0, 20)} is not allowed here: use GET`);
    return;
  }
  const headers: Record<string, string> = {
    "cache-control": found.cacheControl,
    etag: found.etag,
    vary: "Accept-Encoding",
    // Loaded by <script> tags from any page, as Segment's CDN serves it.
    "access-control-allow-origin": "*",
  };
  if (etagMatches(req.headers["if-none-match"], found.etag)) {
    res.writeHead(304, headers);
    res.end();
    return;
  }
  const gzipped = /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? "")) ? found.gzipped : undefined;
  const body = gzipped ?? found.body;
  res.writeHead(200, {
    ...headers,
    "content-type": contentType,
    "content-length": String(body.length),
    ...(gzipped ? { "content-encoding": "gzip" } : {}),
  });
  if (req.method === "HEAD") res.end();
  else res.end(body);
}

/** If-None-Match: `*`, or a list of tags (weak ones compared by their value). */
export function etagMatches(header: string | string[] | undefined, etag: string): boolean {
  if (typeof header !== "string") return false;
  return header.split(",").some((tag) => {
    const trimmed = tag.trim();
    return trimmed === "*" || trimmed.replace(/^W\//, "") === etag;
  });
}

function sendText(res: Res, status: number, text: string): void {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8" });
  res.end(text);
}

/** An uncompressed asset, its ETag a hash of its bytes. */
export function textAsset(text: string | Buffer, cacheControl: string): Asset {
  const body = Buffer.from(text);
  return { body, etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`, cacheControl };
}
