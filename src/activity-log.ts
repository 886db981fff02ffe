import type { Clock } from "./clock.js";
import type { DeliveryCompletion } from "./db/job-table/index.js";
import type { Logger } from "./logger.js";
import type { Metrics } from "./metrics.js";

export interface ActivityLogOptions {
  logger: Logger;
  metrics: Metrics;
  clock: Clock;
  /** How often a summary is logged (only when something happened); 0: never. */
  intervalMs: number;
  /** After a destination's permanent failure is logged, the next one is logged no sooner than this. */
  failureLogIntervalMs?: number;
  /** Names of destinations by id, for the summary (ids alone mean nothing to a reader of the log). */
  destinationNames?: (ids: readonly string[]) => Promise<ReadonlyMap<string, string>>;
}

export interface ActivityLog {
  /** Feeds the delivery loop's "completed" events. */
  completed(completions: readonly DeliveryCompletion[]): void;
  /** Logs the summary of what happened since the last one, if anything did (the timer calls it). */
  flush(): Promise<void>;
  stop(): void;
}

interface DestinationCounts {
  delivered: number;
  failed: number;
  expired: number;
  /** Attempts that failed and will be retried: an endpoint that is down shows here long before anything expires. */
  retryableFailures: number;
}

/**
 * What an operator sees at `info` while the service runs: a periodic summary
 * (calls accepted; per destination, by name: deliveries delivered, failed
 * and expired, and attempts that failed and will be retried)
 * and a warning when a destination's delivery fails for good, at most one per
 * destination per failureLogIntervalMs, so a dead endpoint does not flood
 * the log. Neither names a webhook URL (it may carry a token).
 */
export function createActivityLog(options: ActivityLogOptions): ActivityLog {
  const failureLogIntervalMs = options.failureLogIntervalMs ?? 15 * 60_000;
  let byDestination = new Map<string, DestinationCounts>();
  const lastFailureLogged = new Map<string, number>();
  let suppressedFailures = 0;
  let acceptedBefore: number | undefined;

  async function callsAcceptedTotal(): Promise<number> {
    const metric = await options.metrics.callsAccepted.get();
    return metric.values.reduce((sum, value) => sum + value.value, 0);
  }
  // The counter may already count calls from before this log began.
  const baseline = callsAcceptedTotal().then((total) => (acceptedBefore ??= total));

  function logPermanentFailure(completion: DeliveryCompletion) {
    const at = options.clock.now().getTime();
    const last = lastFailureLogged.get(completion.destinationId);
    if (last !== undefined && at - last < failureLogIntervalMs) {
      suppressedFailures++;
      return;
    }
    lastFailureLogged.set(completion.destinationId, at);
    const attempt = completion.attempts[completion.attempts.length - 1];
    options.logger.warn(
      {
        destinationId: completion.destinationId,
        deliveryId: completion.id,
        status: completion.status,
        lastStatusCode: attempt?.statusCode ?? null,
        lastError: attempt?.error ?? null,
        nextReportAfterMinutes: Math.round(failureLogIntervalMs / 60_000),
      },
      completion.status === "expired"
        ? "a delivery expired: its destination did not accept it before the retry deadline"
        : "a delivery failed for good: its destination refused it",
    );
  }

  const timer = options.intervalMs > 0 ? setInterval(() => void flush(), options.intervalMs) : undefined;
  timer?.unref();

  async function namesOf(ids: string[]): Promise<ReadonlyMap<string, string>> {
    if (!options.destinationNames || ids.length === 0) return new Map();
    try {
      return await options.destinationNames(ids);
    } catch (error) {
      // The counts are worth logging without the names.
      options.logger.debug({ err: error }, "could not read destination names for the activity summary");
      return new Map();
    }
  }

  async function flush() {
    await baseline;
    const total = await callsAcceptedTotal();
    const callsAccepted = total - (acceptedBefore ?? total);
    acceptedBefore = total;
    const destinations = byDestination;
    byDestination = new Map();
    const suppressed = suppressedFailures;
    suppressedFailures = 0;
    if (callsAccepted === 0 && destinations.size === 0) return;
    const names = await namesOf([...destinations.keys()]);
    options.logger.info(
      {
        callsAccepted,
        deliveries: Object.fromEntries([...destinations].map(([id, counts]) => [id, { name: names.get(id) ?? null, ...counts }])),
        ...(suppressed > 0 ? { unreportedPermanentFailures: suppressed } : {}),
      },
      "activity since the last summary",
    );
  }

  return {
    completed(completions) {
      for (const completion of completions) {
        const status = completion.status;
        // A delivery handed back untried (attempted false) is no failure.
        const retried = status === "retrying" && completion.attempted;
        if (status !== "delivered" && status !== "failed" && status !== "expired" && !retried) continue;
        let counts = byDestination.get(completion.destinationId);
        if (!counts) {
          counts = { delivered: 0, failed: 0, expired: 0, retryableFailures: 0 };
          byDestination.set(completion.destinationId, counts);
        }
        if (retried) counts.retryableFailures++;
        else counts[status as "delivered" | "failed" | "expired"]++;
        if (status === "failed" || status === "expired") logPermanentFailure(completion);
      }
    },
    flush,
    stop() {
      if (timer) clearInterval(timer);
    },
  };
}
