import type { Logger } from "../logger.js";
import { sendJson } from "./operational-routes.js";
import type { Req, Res, RouteHandler } from "./types.js";

export interface RouteTableOptions {
  /**
   * Runs before any route: answers preflights (true) and adds CORS headers
   * to the rest. Absent where nothing is served to browsers (a worker).
   */
  cors?: ((req: Req, res: Res, path: string) => boolean) | undefined;
  /** Tried in order; the first that answers (true) ends the search. */
  routes: readonly RouteHandler[];
  logger: Pick<Logger, "error">;
}

/** A route that answers every path under `prefix` with `handler`. */
export function prefixRoute(prefix: string, handler: (req: Req, res: Res) => unknown): RouteHandler {
  return async (req, res, path) => {
    if (!path.startsWith(prefix)) return false;
    await handler(req, res);
    return true;
  };
}

/**
 * The listener's request handler: the one place that decides which part of
 * Waypost answers a path. A route that throws is logged and answered 500
 * (or its response ended, when it had begun), so one bad request never
 * leaves a connection hanging; nothing matching is a 404 naming the path.
 */
export function createRouteTable(options: RouteTableOptions): (req: Req, res: Res) => void {
  const { cors, routes, logger } = options;
  return (req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    void (async () => {
      if (cors?.(req, res, path)) return;
      for (const route of routes) if (await route(req, res, path)) return;
      sendJson(res, 404, { error: `no route for ${req.method} ${path}` });
    })().catch((error) => {
      logger.error({ err: error, path }, "request failed");
      if (!res.headersSent) sendJson(res, 500, { error: "internal error" });
      else res.end();
    });
  };
}
