import type { Authenticator } from "../api/auth.js";
import type { Ingestor } from "../ingest/ingestor.js";
import type { Logger } from "../logger.js";
import type { RouteHandler } from "../server.js";

export interface CompatHttpApiOptions {
  ingestor: Ingestor;
  auth: Authenticator;
  logger: Logger;
}

/** The de facto standard tracking HTTP API (/v1/batch, /v1/track, ...). Not yet implemented (issue 5). */
export function createCompatHttpApi(_options: CompatHttpApiOptions): RouteHandler {
  return async () => false;
}
