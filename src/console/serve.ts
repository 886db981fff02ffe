import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Req, Res } from "../http/types.js";

export interface ConsoleRoutesOptions {
  /** The built console (index.html and assets/); defaults to dist/console of this package. */
  dir?: string;
}

/**
 * The page may load only its own scripts, styles and data; it may talk only
 * to its own origin and never be framed. uPlot sizes its elements through
 * the CSSOM (element.style), which style-src does not restrict, so no
 * 'unsafe-inline' is needed.
 */
export const consoleCsp =
  "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; " +
  "frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

const contentTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
  ".png": "image/png",
  ".svg": "image/svg+xml",
};

interface Asset {
  body: Buffer;
  type: string;
}

/**
 * Serves the operator console under /console/: the built files, and
 * index.html for every other path below it (the page routes on the client).
 * The files are few and small; they are read once, on the first request.
 */
export function createConsoleRoutes(options: ConsoleRoutesOptions = {}) {
  const dir = options.dir ?? defaultConsoleDir();
  let assets: Promise<Map<string, Asset>> | undefined;

  return async function handle(req: Req, res: Res, urlPath: string): Promise<boolean> {
    if (urlPath !== "/console" && !urlPath.startsWith("/console/")) return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      send(res, req, 405, "text/plain; charset=utf-8", Buffer.from("method not allowed\n"), { allow: "GET, HEAD" });
      return true;
    }
    if (urlPath === "/console") {
      res.writeHead(308, { location: "/console/", "content-length": "0" });
      res.end();
      return true;
    }
    let relative: string;
    try {
      relative = decodeURIComponent(urlPath.slice("/console/".length));
    } catch {
      send(res, req, 400, "text/plain; charset=utf-8", Buffer.from("malformed path\n"));
      return true;
    }
    // The files are looked up in a map, so nothing outside dir can be read;
    // a path that tries is still refused plainly rather than given the page.
    if (relative.includes("\0") || relative.split(/[\\/]/).some((part) => part === "..")) {
      send(res, req, 400, "text/plain; charset=utf-8", Buffer.from("path not allowed\n"));
      return true;
    }
    assets ??= loadAssets(dir);
    const files = await assets.catch(() => undefined);
    const index = files?.get("index.html");
    if (!files || !index) {
      assets = undefined;
      send(res, req, 503, "text/plain; charset=utf-8", Buffer.from("the console is not built: run npm run build\n"));
      return true;
    }
    const asset = files.get(relative);
    if (asset && relative !== "index.html") {
      // Asset names carry a content hash: they never change under one name.
      send(res, req, 200, asset.type, asset.body, { "cache-control": "public, max-age=31536000, immutable" });
      return true;
    }
    if (relative.startsWith("assets/")) {
      send(res, req, 404, "text/plain; charset=utf-8", Buffer.from("not found\n"));
      return true;
    }
    send(res, req, 200, index.type, index.body, { "cache-control": "no-cache" });
    return true;
  };
}

function send(res: Res, req: Req, status: number, type: string, body: Buffer, extra: Record<string, string> = {}): void {
  res.writeHead(status, {
    "content-type": type,
    "content-length": String(body.length),
    "content-security-policy": consoleCsp,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    ...extra,
  });
  if (req.method === "HEAD") res.end();
  else res.end(body);
}

async function loadAssets(dir: string): Promise<Map<string, Asset>> {
  const files = new Map<string, Asset>();
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const full = path.join(entry.parentPath, entry.name);
    const relative = path.relative(dir, full).split(path.sep).join("/");
    const type = contentTypes[path.extname(entry.name)] ?? "application/octet-stream";
    files.set(relative, { body: await readFile(full), type });
  }
  return files;
}

/** dist/console of the package this file belongs to (from src/ in tests, dist/src/ when built). */
function defaultConsoleDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, "package.json"))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error("cannot find the package root of the console");
    dir = parent;
  }
  return path.join(dir, "dist", "console");
}
