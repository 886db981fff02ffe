import { randomUUID } from "node:crypto";
import type { Clock } from "../../../clock.js";
import type { AttemptResult, BatchAttemptRef } from "../../../db/job-table/index.js";
import type { VendorContext } from "../../../catalog/catalog-fetch.js";
import type { SegmentEvent } from "../../../catalog/segment-event.js";
import { attemptsOfRun } from "./outcomes.js";
import type { IntegrationRunner, RunnableSubscription } from "./runner.js";

/** The vendor context of one run of a destination's actions (its requests through the destination's client). */
export type ContextOf = (destinationId: string, runner: IntegrationRunner) => VendorContext;

interface Waiting {
  event: SegmentEvent;
  resolve: (attempts: AttemptResult[]) => void;
}

interface Batch {
  destinationId: string;
  runner: IntegrationRunner;
  subscription: RunnableSubscription;
  calls: Waiting[];
  firstAt: number;
  timer: NodeJS.Timeout;
}

export interface IntegrationBatcher {
  /** Adds a call to its subscription's batch; resolves with the call's attempt entries for it. */
  add(destinationId: string, runner: IntegrationRunner, subscription: RunnableSubscription, event: SegmentEvent): Promise<AttemptResult[]>;
  tick(): void;
  flush(): void;
  close(): Promise<void>;
}

/**
 * Batches of a subscription whose action has a batch form and whose
 * mapping turns batching on: calls wait per destination and subscription
 * until the action's batch size or `flushMs` after the first (by the
 * injectable clock, on the loop's tick; a timer backs it in real time),
 * then one executeBatch runs them. Each request the batch form makes is
 * one batch operation (its own BatchAttemptRef, shared by every call of
 * the batch); each call's result is the catalog's per-item status.
 */
export function createIntegrationBatcher(options: { clock: Clock; flushMs: number; contextOf: ContextOf }): IntegrationBatcher {
  const { clock, flushMs } = options;
  const batches = new Map<string, Batch>();
  const sending = new Set<Promise<void>>();

  function send(key: string, batch: Batch) {
    if (batches.get(key) === batch) batches.delete(key);
    clearTimeout(batch.timer);
    const { calls, runner, subscription } = batch;
    const context = options.contextOf(batch.destinationId, runner);
    const started = clock.now();
    const work = runner
      .runBatch(
        subscription,
        calls.map((c) => c.event),
        context,
      )
      .then((verdicts) => {
        const refs: BatchAttemptRef[] = context.requests.map(() => ({ id: randomUUID(), calls: calls.length }));
        calls.forEach((call, i) => {
          const verdict = verdicts[i] ?? { outcome: "retryable" as const, message: "no status for this call" };
          const requests = verdict.notSent ? [] : context.requests;
          const attempts = attemptsOfRun(subscription.name, subscription.index, requests, verdict, started, runner.label);
          // Each call its own attempt objects (the loop sets revision and body sent in place), sharing the operation's ref.
          if (requests.length > 0) {
            for (const [r, attempt] of attempts.entries()) attempt.batch = refs[r];
          }
          call.resolve(attempts);
        });
      })
      .catch((error: unknown) => {
        for (const call of calls) {
          call.resolve(
            attemptsOfRun(
              subscription.name,
              subscription.index,
              [],
              { outcome: "retryable", message: `batch not sent: ${String(error)}` },
              started,
              runner.label,
            ),
          );
        }
      });
    sending.add(work);
    void work.finally(() => sending.delete(work));
  }

  return {
    add(destinationId, runner, subscription, event) {
      const key = `${destinationId} ${subscription.index}`;
      let batch = batches.get(key);
      // Settings moved on: what waits goes with the settings it came with.
      if (batch && batch.runner !== runner) {
        send(key, batch);
        batch = undefined;
      }
      if (!batch) {
        const opened: Batch = {
          destinationId,
          runner,
          subscription,
          calls: [],
          firstAt: clock.now().getTime(),
          timer: setTimeout(() => {
            if (batches.get(key) === opened && clock.now().getTime() - opened.firstAt >= flushMs) send(key, opened);
          }, flushMs),
        };
        opened.timer.unref();
        batches.set(key, opened);
        batch = opened;
      }
      const target = batch;
      const result = new Promise<AttemptResult[]>((resolve) => target.calls.push({ event, resolve }));
      if (target.calls.length >= subscription.batch!.size) send(key, target);
      return result;
    },
    tick() {
      const now = clock.now().getTime();
      for (const [key, batch] of [...batches]) if (now - batch.firstAt >= flushMs) send(key, batch);
    },
    flush() {
      for (const [key, batch] of [...batches]) send(key, batch);
    },
    async close() {
      for (const [key, batch] of [...batches]) send(key, batch);
      await Promise.allSettled([...sending]);
    },
  };
}
