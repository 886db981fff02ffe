import type pg from "pg";
import { upsertViolations, type ViolationAggregate } from "../db/queries/plan-violations.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics.js";
import type { Violation } from "./check-call.js";

export interface ViolationRecorderOptions {
  pool: pg.Pool;
  logger: Pick<Logger, "warn">;
  metrics?: Metrics | undefined;
  /** How often the counts kept in memory are written. */
  flushIntervalMs?: number;
  /** Distinct (source, event, path, kind) kept between flushes; past it new ones are only counted in /metrics. */
  maxPending?: number;
}

export interface ViolationRecorder {
  /** Counts the violations of calls received at `at`: in memory, no I/O. */
  record(sourceId: string, violations: readonly Violation[], at: Date): void;
  /** Writes what was counted so far (and waits for a flush under way). */
  flush(): Promise<void>;
  start(): void;
  /** Stops the timer and flushes what is left. */
  stop(): Promise<void>;
}

/**
 * Violations are added up in memory, by source, call type, event, path and
 * kind, and upserted in one statement per flush, so a call that violates
 * the plan costs ingest a map update, not a write.
 */
export function createViolationRecorder(options: ViolationRecorderOptions): ViolationRecorder {
  const maxPending = options.maxPending ?? 10_000;
  let pending = new Map<string, ViolationAggregate>();
  let chain: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;

  function add(key: string, aggregate: ViolationAggregate): void {
    const current = pending.get(key);
    if (!current) {
      if (pending.size < maxPending) pending.set(key, aggregate);
      return;
    }
    current.count += aggregate.count;
    if (aggregate.firstSeen < current.firstSeen) current.firstSeen = aggregate.firstSeen;
    if (aggregate.lastSeen >= current.lastSeen) {
      current.lastSeen = aggregate.lastSeen;
      current.example = aggregate.example;
      current.message = aggregate.message;
    }
  }

  async function write(): Promise<void> {
    if (pending.size === 0) return;
    const batch = pending;
    pending = new Map();
    try {
      await upsertViolations(options.pool, [...batch.values()]);
    } catch (error) {
      options.logger.warn({ err: error }, "writing tracking plan violations failed; they are kept for the next flush");
      for (const [key, aggregate] of batch) add(key, aggregate);
    }
  }

  function flush(): Promise<void> {
    chain = chain.then(write);
    return chain;
  }

  return {
    flush,
    record(sourceId, violations, at) {
      for (const v of violations) {
        options.metrics?.planViolations.inc({ source_id: sourceId, kind: v.kind });
        add(`${sourceId}\u0000${v.callType}\u0000${v.event}\u0000${v.path}\u0000${v.kind}`, {
          sourceId,
          callType: v.callType,
          event: v.event.slice(0, 200),
          path: v.path.slice(0, 200),
          kind: v.kind,
          count: 1,
          firstSeen: at,
          lastSeen: at,
          message: v.message.slice(0, 200),
          example: v.example,
        });
      }
    },
    start() {
      timer ??= setInterval(() => {
        void flush();
      }, options.flushIntervalMs ?? 1000);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await flush();
    },
  };
}
