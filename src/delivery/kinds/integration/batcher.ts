import { randomUUID } from "node:crypto";
import type { Clock } from "../../../clock.js";
import type { AttemptResult, BatchAttemptRef } from "../../../db/job-table/index.js";
import type { VendorContext } from "../../../catalog/catalog-fetch.js";
import type { SegmentEvent } from "../../../catalog/segment-event.js";
import { createHeldBatches, type HeldCall } from "../held-batch.js";
import { attemptsOfRun } from "./outcomes.js";
import type { IntegrationRunner, RunnableSubscription } from "./runner.js";

/** The vendor context of one run of a destination's actions (its requests through the destination's client). */
export type ContextOf = (destinationId: string, runner: IntegrationRunner) => VendorContext;

/** What a subscription's batch is sent with: the runner of the settings revision its calls came with. */
interface BatchTarget {
  destinationId: string;
  runner: IntegrationRunner;
  subscription: RunnableSubscription;
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
 * (held-batch.ts) until the action's batch size or `flushMs` after the
 * first, then one executeBatch runs them. Each request the batch form
 * makes is one batch operation (its own BatchAttemptRef, shared by every
 * call of the batch); each call's result is the catalog's per-item status.
 */
export function createIntegrationBatcher(options: { clock: Clock; flushMs: number; contextOf: ContextOf }): IntegrationBatcher {
  const { clock, flushMs } = options;
  const held = createHeldBatches<SegmentEvent, BatchTarget, AttemptResult[]>({
    clock,
    send,
    // Settings moved on: what waits goes with the settings it came with.
    sameContext: (a, b) => a.runner === b.runner,
  });

  function send(batch: BatchTarget, calls: Array<HeldCall<SegmentEvent, AttemptResult[]>>): Promise<void> {
    const { runner, subscription } = batch;
    const context = options.contextOf(batch.destinationId, runner);
    const started = clock.now();
    return runner
      .runBatch(
        subscription,
        calls.map((c) => c.item),
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
  }

  return {
    add(destinationId, runner, subscription, event) {
      const limits = { maxCalls: subscription.batch!.size, maxWaitMs: flushMs };
      return held.add(`${destinationId} ${subscription.index}`, { destinationId, runner, subscription }, limits, event);
    },
    tick: () => held.tick(),
    flush: () => held.flush(),
    close: () => held.close(),
  };
}
