import type pg from "pg";
import type { Clock } from "../clock.js";
import { expirePausedDeliveries, purgeOldMessages } from "../db/queries/maintenance.js";
import type { Logger } from "../logger.js";

export interface MaintenanceOptions {
  pool: pg.Pool;
  clock: Clock;
  logger: Logger;
  retentionMs: number;
  deadlineMs: number;
  intervalMs?: number;
}

export interface Maintenance {
  /** One pass: expire paused deliveries, purge data past retention. */
  runOnce(): Promise<{ expired: number; purged: number }>;
  start(): void;
  stop(): Promise<void>;
}

const purgeBatch = 5_000;

/** Periodic housekeeping; safe to run in several processes at once. */
export function createMaintenance(options: MaintenanceOptions): Maintenance {
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<unknown> = Promise.resolve();

  async function runOnce() {
    const now = options.clock.now();
    const expired = await expirePausedDeliveries(options.pool, now, options.deadlineMs);
    const cutoff = new Date(now.getTime() - options.retentionMs);
    let purged = 0;
    for (;;) {
      const n = await purgeOldMessages(options.pool, cutoff, purgeBatch);
      purged += n;
      if (n < purgeBatch) break;
    }
    if (expired > 0 || purged > 0) options.logger.info({ expired, purged }, "maintenance");
    return { expired, purged };
  }

  return {
    runOnce,
    start() {
      timer = setInterval(() => {
        current = runOnce().catch((error) => options.logger.error({ err: error }, "maintenance failed"));
      }, options.intervalMs ?? 60_000);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      await current;
    },
  };
}
