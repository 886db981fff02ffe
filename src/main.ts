import { ConfigError, loadConfig, type Config } from "./config.js";
import { createLogger } from "./logger.js";
import { startWaypost, type Waypost } from "./server.js";
import { describeStartupFailure } from "./startup-error.js";

const signalExitCodes = { SIGTERM: 143, SIGINT: 130 } as const;
type StopSignal = keyof typeof signalExitCodes;

/**
 * A repeat of the stop signal within this long is the same request: one
 * Ctrl-C on `npm start` arrives twice, from the terminal (to the whole
 * foreground process group) and forwarded by npm, about 1 ms apart.
 */
const sameRequestMs = 1_000;

/**
 * `node dist/server.js`: run Waypost until SIGTERM or SIGINT. The first
 * signal stops gracefully (in-flight work finished or handed back, within
 * WAYPOST_SHUTDOWN_TIMEOUT_MS); a second one exits at once, unless it is the
 * same signal again within a second (the same request, delivered twice). The
 * handlers are in place before start-up, so a signal during it is not lost
 * either.
 */
async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`waypost: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger(config.logLevel);
  let waypost: Waypost | undefined;
  let stopRequested: StopSignal | undefined;
  let requestedAt = 0;

  const stop = (signal: StopSignal) => {
    logger.info({ signal }, "shutting down: finishing in-flight work (another signal a second or more later exits at once)");
    waypost!.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  const onSignal = (signal: StopSignal) => {
    if (stopRequested) {
      if (signal === stopRequested && performance.now() - requestedAt < sameRequestMs) {
        logger.debug({ signal }, "the same stop signal again within a second: one request, still finishing in-flight work");
        return;
      }
      // Exiting runs the exit hooks, which stop an embedded Postgres.
      logger.warn({ signal }, "second signal: exiting now without finishing in-flight work");
      process.exit(signalExitCodes[signal]);
    }
    stopRequested = signal;
    requestedAt = performance.now();
    if (waypost) stop(signal);
    else logger.info({ signal }, "stop requested during start-up: stopping once started");
  };
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  process.on("SIGINT", () => onSignal("SIGINT"));
  watchLauncher(() => {
    if (!stopRequested) onSignal("SIGTERM");
  });

  try {
    waypost = await startWaypost({ config, logger });
  } catch (error) {
    process.stderr.write(`waypost: failed to start: ${describeStartupFailure(error)}\n`);
    logger.debug({ err: error }, "start-up failure");
    process.exit(1);
  }
  if (stopRequested) stop(stopRequested);
}

/**
 * Started by `npm start`, the launcher may die without passing a signal on
 * (killed hard, or an npm that does not forward): then this process is
 * re-parented. Noticing that stops it instead of leaving it, and its
 * embedded Postgres, running with nobody to stop them.
 */
function watchLauncher(onGone: () => void): void {
  if (!process.env.npm_lifecycle_event) return;
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    onGone();
  }, 1_000);
  timer.unref();
}

main().catch((error: unknown) => {
  process.stderr.write(`waypost: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
