import type pg from "pg";
import type { Clock } from "../clock.js";
import { destinationNames, listCircuitStates, pruneOrphanHealthRows } from "../db/queries/destination-health.js";
import type { Logger } from "../logger.js";
import type { JobTableDriver } from "../db/job-table/index.js";
import type { Metrics } from "../metrics.js";
import type { Transition } from "./circuit.js";
import type { OperatorEvents } from "./operator-events.js";

export interface HealthMonitorOptions {
  pool: pg.Pool;
  /** The job table's driver: it takes the expiry reports. */
  jobTable: JobTableDriver;
  clock: Clock;
  logger: Logger;
  metrics?: Metrics | undefined;
  events: OperatorEvents;
  /** How often the gauge is refreshed from the table and expiries are reported. */
  intervalMs?: number;
  /** At most one deliveries_expired event per destination per this. */
  expiredEventIntervalMs?: number;
}

export interface HealthMonitor {
  /**
   * Circuit transitions this process's own writes made, the moment they are
   * committed: the gauge follows at once (before anyone is told the
   * deliveries that made them are written), the events with `transitions`.
   */
  markTransitions(transitions: readonly Transition[]): void;
  /** Circuit transitions this process's own writes made: operator events (after markTransitions). */
  transitions(transitions: readonly Transition[]): Promise<void>;
  /** One pass: refresh the gauge from the table, report expiries that are due. */
  runOnce(): Promise<void>;
  start(): void;
  stop(): Promise<void>;
}

/**
 * Keeps every process's waypost_destination_circuit_open gauge in step with
 * the shared table, and turns the table's transitions and expiry counts into
 * operator events. A transition is announced only by the process whose
 * statement made it, and an expiry count only by the process that took it,
 * so no event goes out twice.
 */
export function createHealthMonitor(options: HealthMonitorOptions): HealthMonitor {
  const { pool, clock, logger, metrics, events } = options;
  const gauge = metrics?.destinationCircuitOpen;
  const expiredEveryMs = options.expiredEventIntervalMs ?? 60_000;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  // Moves on with every transition set here: a table read from before one must not set the gauge back.
  let transitionsSeen = 0;

  async function runOnce() {
    const seen = transitionsSeen;
    const states = await listCircuitStates(pool);
    if (gauge && seen === transitionsSeen) {
      // Series of deleted destinations go; the others are set from the table.
      gauge.reset();
      for (const { destinationId, open } of states) gauge.set({ destination_id: destinationId }, open ? 1 : 0);
    }
    for (const report of await options.jobTable.reads.takeExpiredReports(pool, clock.now(), expiredEveryMs)) {
      events.emit("destination.deliveries_expired", {
        destinationId: report.destinationId,
        name: report.name,
        count: report.count,
        since: report.since?.toISOString() ?? null,
      });
    }
    await pruneOrphanHealthRows(pool);
  }

  return {
    markTransitions(transitions) {
      if (transitions.length === 0) return;
      transitionsSeen++;
      for (const t of transitions) {
        if (t.kind === "opened") gauge?.set({ destination_id: t.row.destinationId }, 1);
        else if (t.kind === "closed") gauge?.set({ destination_id: t.row.destinationId }, 0);
      }
    },
    async transitions(transitions) {
      if (transitions.length === 0) return;
      const names = await destinationNames(pool, [...new Set(transitions.map((t) => t.row.destinationId))]);
      for (const t of transitions) {
        const id = t.row.destinationId;
        const name = names.get(id) ?? null;
        if (t.kind === "opened") {
          events.emit("destination.circuit_opened", {
            destinationId: id,
            name,
            consecutiveFailures: t.row.consecutiveFailures,
            firstFailureTime: t.row.firstFailureAt?.toISOString() ?? null,
            lastError: t.row.lastError,
            cooldownMs: t.row.cooldownMs,
            nextProbeTime: t.row.probeAt?.toISOString() ?? null,
          });
        } else if (t.kind === "closed") {
          events.emit("destination.circuit_closed", {
            destinationId: id,
            name,
            openedTime: t.openedAt.toISOString(),
            closedTime: t.at.toISOString(),
            openForMs: Math.max(0, t.at.getTime() - t.openedAt.getTime()),
          });
        } else {
          logger.info(
            { destinationId: id, name, lastError: t.row.lastError, cooldownMs: t.row.cooldownMs },
            "destination probe failed: the circuit stays open, the next probe waits longer",
          );
        }
      }
    },
    runOnce,
    start() {
      timer = setInterval(() => {
        running = runOnce().catch((error) => logger.error({ err: error }, "refreshing destination health failed"));
      }, options.intervalMs ?? 15_000);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      await running;
    },
  };
}
