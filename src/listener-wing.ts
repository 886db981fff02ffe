import type pg from "pg";
import { createActivityLog } from "./activity-log.js";
import type { Clock } from "./clock.js";
import type { Closer } from "./closers.js";
import type { Config } from "./config.js";
import { selectDestinationNames } from "./db/queries/destinations.js";
import type { DeliveryLoop } from "./delivery/loop.js";
import { listen } from "./http/listener.js";
import { explainListenFailure } from "./http/port-check.js";
import type { Req, Res } from "./http/types.js";
import type { Logger } from "./logger.js";
import type { Metrics } from "./metrics.js";
import { startupSummary } from "./startup-summary.js";

export interface ListenerWingOptions {
  config: Config;
  logger: Logger;
  clock: Clock;
  closers: Closer[];
  handler: (req: Req, res: Res) => void;
  pool: pg.Pool;
  metrics: Metrics;
  delivery: DeliveryLoop | undefined;
}

/** The activity summary and the listener, last: nothing is answered before every wing is open. */
export async function openListener(options: ListenerWingOptions): Promise<{ url: string; port: number }> {
  const { config, logger, clock, closers, pool } = options;
  const activity = createActivityLog({
    logger,
    metrics: options.metrics,
    clock,
    intervalMs: config.summaryIntervalMs,
    destinationNames: (ids) => selectDestinationNames(pool, ids),
  });
  options.delivery?.events.on("completed", activity.completed);
  closers.push(async () => {
    activity.stop();
    await activity.flush();
  });
  const listener = await listen(options.handler, config.port, config.host, config.connections).catch((error: unknown) => {
    throw explainListenFailure(error, config.port, config.host);
  });
  closers.push(() => listener.close());
  const host = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${listener.port}`;
  logger.info(startupSummary(config, url), "Waypost is listening");
  return { url, port: listener.port };
}
