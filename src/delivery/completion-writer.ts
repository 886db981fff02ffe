import type pg from "pg";
import { systemClock, type Clock } from "../clock.js";
import type { JobTableDriver, DeliveryCompletion } from "../db/job-table/index.js";
import { withTransaction } from "../db/pool.js";
import type { HealthPolicy, Transition } from "../health/circuit.js";
import { recordHealth } from "../health/record-health.js";
import type { Logger } from "../logger.js";
import { createLeaseWriteLane, type LeaseWriteLane } from "./lease-write-lane.js";

export interface CompletionWriterOptions {
  pool: pg.Pool;
  logger: Logger;
  /**
   * Called with the completions that were written (their lease still held)
   * and those that were not: the delivery was cancelled, expired, replayed
   * or taken over by another process meanwhile.
   */
  onWritten?: (written: DeliveryCompletion[], stale: DeliveryCompletion[], transitions: Transition[]) => void;
  /**
   * Endpoint health: each batch's results also update their destinations'
   * health rows, in the same transaction; the circuit transitions that made
   * are passed to onWritten.
   */
  health?: { policy: HealthPolicy; clock: Clock } | undefined;
  /**
   * A result the database refuses is recorded without its attempt rows and
   * tried again after `retryDelayMs`; the delivery fails with the
   * database's error at the `max`-th refusal (default 3).
   */
  refusals?: { max?: number; retryDelayMs: number; clock?: Clock };
  /** Called with results given up unwritten (their leases run out). */
  onDropped?: (dropped: DeliveryCompletion[]) => void;
  /** Most results in one statement. */
  batchSize?: number;
  /** First wait after a failed write (doubling, up to `retryMaxMs`). */
  retryInitialMs?: number;
  retryMaxMs?: number;
  /** Shared with the lease keeper, so a write never runs beside a lease extension (lease-write-lane.ts). */
  lane?: LeaseWriteLane;
  /** The job table's driver (one Postgres's or Citus's). */
  jobTable: JobTableDriver;
}

export interface CompletionWriter {
  add(completion: DeliveryCompletion): void;
  /** Resolves when everything added so far is written. */
  flush(): Promise<void>;
  /**
   * Writes what it can within `deadlineMs`, then drops the rest with a log
   * line (their leases expire and the deliveries are tried again), and
   * takes nothing more.
   */
  close(deadlineMs: number): Promise<void>;
}

/**
 * Whether a failed write was refused for one of its rows (a constraint, a
 * trigger, bad data), rather than for the database (away, busy, or a
 * schema or permission problem that every row would hit). Postgres names
 * the reason in a SQLSTATE, whose class tells them apart: only these
 * classes are about the data. Anything else, and errors without a SQLSTATE
 * (a socket error, a timeout), are retried whole after a wait.
 */
const rowErrorClasses = new Set([
  "09", // triggered action exception
  "21", // cardinality violation
  "22", // data exception
  "23", // integrity constraint violation
  "27", // triggered data change violation
  "44", // WITH CHECK OPTION violation
  "P0", // raised by PL/pgSQL (a trigger)
]);

export function isRowError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) && rowErrorClasses.has(code.slice(0, 2));
}

/**
 * Batches completions into one statement each, as River does: at high rates
 * this turns thousands of small transactions into a few large ones.
 *
 * Batches form by back-pressure, not by a timer: a write starts as soon as
 * none is in flight (at the end of the event-loop turn the first result
 * arrived in), and everything that arrived while one was in flight is the
 * next batch, up to `batchSize`. Batches grow with the load; a result
 * waits at most for the write before it, never for an idle timer.
 *
 * A write the database refuses for one of its rows is split in halves until
 * the row is found; the others are written, so one bad row never blocks the
 * results behind it. That one result is recorded by a simpler statement
 * that writes no attempt rows (refuse.ts): the refusal is counted with the
 * database's error and the delivery is tried again later, and failed with
 * that error after a few refusals, rather than sent again after every lease
 * for ever. Only if that is refused too is the result dropped (its lease
 * runs out). A write that fails for
 * the database (an outage) keeps its batch and retries with a doubling,
 * capped wait; until then the leases keep other processes off those
 * deliveries, and if this process dies they expire.
 */
export function createCompletionWriter(options: CompletionWriterOptions): CompletionWriter {
  const { logger } = options;
  const batchSize = options.batchSize ?? 500;
  const retryInitialMs = options.retryInitialMs ?? 500;
  const retryMaxMs = options.retryMaxMs ?? 30_000;
  const refusals = {
    max: options.refusals?.max ?? 3,
    retryDelayMs: options.refusals?.retryDelayMs ?? 10_000,
    clock: options.refusals?.clock ?? options.health?.clock ?? systemClock,
  };
  const lane = options.lane ?? createLeaseWriteLane();
  const { jobTable } = options;
  let buffer: DeliveryCompletion[] = [];
  // A drain started at the end of this event-loop turn.
  let scheduled: NodeJS.Immediate | undefined;
  // A drain loop is running: it takes what is added as its next batch.
  let draining = false;
  let writing: Promise<void> = Promise.resolve();
  let closed = false;
  let cancelWait: (() => void) | undefined;
  // Taken out of the buffer and being written now.
  let inWrite = 0;

  function schedule() {
    if (draining || scheduled) return;
    // setImmediate, not now: results that arrive in the same turn (a burst
    // of responses read together) share the first statement.
    scheduled = setImmediate(() => {
      scheduled = undefined;
      void drain();
    });
  }

  function unschedule() {
    if (scheduled) clearImmediate(scheduled);
    scheduled = undefined;
  }

  /** A wait that close() can cut short. */
  function pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wait = setTimeout(done, ms);
      function done() {
        clearTimeout(wait);
        cancelWait = undefined;
        resolve();
      }
      cancelWait = done;
    });
  }

  /**
   * The deliveries first, then their health rows: the claim may wait for a
   * health row while holding delivery rows, never the other way round, so
   * taking them in this order cannot deadlock with it.
   */
  async function writeOnce(batch: DeliveryCompletion[]): Promise<{ written: Set<string>; transitions: Transition[] }> {
    return lane.run(() => writeInTransaction(batch));
  }

  async function writeInTransaction(batch: DeliveryCompletion[]): Promise<{ written: Set<string>; transitions: Transition[] }> {
    const health = options.health;
    if (!health) return { written: await jobTable.completeDeliveries(options.pool, batch), transitions: [] };
    return withTransaction(options.pool, async (tx) => {
      const written = await jobTable.completeDeliveries(tx, batch);
      const recorded = batch.filter((c) => written.has(c.id));
      return { written, transitions: await recordHealth(tx, recorded, health.policy, health.clock.now(), jobTable.lockHealthRows) };
    });
  }

  /**
   * Writes a batch, bisecting it when a row is refused. Returns what is
   * left unwritten because the database failed (not a row), with the error.
   */
  async function write(batch: DeliveryCompletion[]): Promise<{ unwritten: DeliveryCompletion[]; error?: unknown }> {
    try {
      const { written, transitions } = await writeOnce(batch);
      options.onWritten?.(
        batch.filter((c) => written.has(c.id)),
        batch.filter((c) => !written.has(c.id)),
        transitions,
      );
      return { unwritten: [] };
    } catch (error) {
      if (closed || !isRowError(error)) return { unwritten: batch, error };
      if (batch.length === 1) {
        await refuse(batch[0]!, error);
        return { unwritten: [] };
      }
      const half = Math.ceil(batch.length / 2);
      const first = await write(batch.slice(0, half));
      if (first.error !== undefined) return { unwritten: [...first.unwritten, ...batch.slice(half)], error: first.error };
      return write(batch.slice(half));
    }
  }

  /** Records a refused result as a refusal (see above), or drops it if that fails too. */
  async function refuse(poison: DeliveryCompletion, error: unknown): Promise<void> {
    const context = { err: error, deliveryId: poison.id, destinationId: poison.destinationId, status: poison.status };
    const now = refusals.clock.now();
    try {
      const status = await lane.run(() =>
        jobTable.recordRefusedCompletion(options.pool, {
          completion: poison,
          error: `the database refused this delivery's result: ${error instanceof Error ? error.message : String(error)}`,
          now,
          retryAt: new Date(now.getTime() + refusals.retryDelayMs),
          maxRefusals: refusals.max,
        }),
      );
      logger.error(
        { ...context, recordedStatus: status },
        "the database refused this delivery's result; recorded the refusal without its attempts",
      );
      if (status === undefined) options.onWritten?.([], [poison], []);
      else options.onWritten?.([{ ...poison, status, attempts: [], attempted: status === "failed" && poison.attempted }], [], []);
    } catch (fallbackError) {
      logger.error(
        { ...context, fallbackErr: fallbackError },
        "the database refused this delivery's result and its refusal; dropped it (its lease runs out and it is tried again)",
      );
      options.onDropped?.([poison]);
    }
  }

  function drain(): Promise<void> {
    writing = writing.then(async () => {
      let failures = 0;
      draining = true;
      try {
        while (buffer.length > 0 && !closed) {
          const batch = buffer.splice(0, batchSize);
          inWrite = batch.length;
          const { unwritten, error } = await write(batch).finally(() => (inWrite = 0));
          if (unwritten.length === 0) {
            failures = 0;
            continue;
          }
          if (closed) break;
          buffer = [...unwritten, ...buffer];
          const waitMs = Math.min(retryMaxMs, retryInitialMs * 2 ** failures);
          failures++;
          logger.error({ err: error, count: unwritten.length, retryInMs: waitMs }, "writing delivery results failed; retrying");
          await pause(waitMs);
        }
      } finally {
        draining = false;
      }
    });
    return writing;
  }

  return {
    add(completion) {
      if (closed) return;
      buffer.push(completion);
      schedule();
    },
    flush() {
      unschedule();
      return drain();
    },
    async close(deadlineMs) {
      unschedule();
      let expire: NodeJS.Timeout | undefined;
      const deadline = new Promise<"deadline">((resolve) => {
        expire = setTimeout(() => resolve("deadline"), deadlineMs);
      });
      const outcome = await Promise.race([drain().then(() => "written" as const), deadline]);
      clearTimeout(expire);
      closed = true;
      cancelWait?.();
      const dropped = buffer.length + inWrite;
      options.onDropped?.(buffer);
      if (outcome === "deadline" && dropped > 0) {
        logger.warn(
          { count: dropped, deadlineMs },
          "shutdown deadline passed: dropped unwritten delivery results (their leases expire and they are tried again)",
        );
      }
      buffer = [];
    },
  };
}
