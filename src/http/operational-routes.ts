import type { Registry } from "prom-client";
import type { Req, Res, RouteHandler } from "./types.js";

export interface OperationalRoutesOptions {
  registry: Registry;
  /** Ready: migrations applied, database reachable, not shutting down. */
  isReady: () => Promise<boolean>;
}

/** /healthz (the process runs), /readyz (it can take work), /metrics (Prometheus). */
export function createOperationalRoutes(options: OperationalRoutesOptions): RouteHandler {
  return async function handle(req: Req, res: Res, path: string): Promise<boolean> {
    if (req.method !== "GET" && req.method !== "HEAD") return false;
    if (path === "/healthz") {
      sendText(res, 200, "ok\n");
      return true;
    }
    if (path === "/readyz") {
      const ready = await options.isReady().catch(() => false);
      sendText(res, ready ? 200 : 503, ready ? "ready\n" : "not ready\n");
      return true;
    }
    if (path === "/metrics") {
      const body = await options.registry.metrics();
      res.writeHead(200, { "content-type": options.registry.contentType });
      res.end(body);
      return true;
    }
    return false;
  };
}

export function sendText(res: Res, status: number, text: string): void {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8" });
  res.end(text);
}

export function sendJson(res: Res, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}
