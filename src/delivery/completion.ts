import type { RetrySchedule } from "../config.js";
import type { AttemptResult, ClaimedDelivery, DeliveryCompletion } from "../db/job-table/index.js";
import { nextRetryAt } from "./retry-policy.js";

// The kind-independent end of a delivery: whatever the kind, its attempts
// decide the delivery's next state here (a kind prepares and delivers:
// src/delivery/kinds/).

/** The delivery's next state from its attempts. */
export function decideCompletion(
  job: ClaimedDelivery,
  results: readonly AttemptResult[],
  now: Date,
  schedule: RetrySchedule,
  random?: () => number,
): DeliveryCompletion {
  const completion = {
    destinationId: job.destinationId,
    id: job.id,
    leaseToken: job.leaseToken,
    probe: job.probe,
    attempted: true,
    attemptedAt: results[0]?.attemptedAt ?? now,
    attempts: [...results],
    runAt: now,
    retryUrls: null,
  };
  if (results.some((r) => r.outcome === "success")) return { ...completion, status: "delivered" };
  const retryable = results.filter((r) => r.outcome === "retryable");
  if (retryable.length === 0) return { ...completion, status: "failed" };
  const hints = retryable.map((r) => r.retryAfterMs).filter((ms): ms is number => ms !== undefined);
  const next = nextRetryAt(
    {
      attempts: job.attemptCount + 1,
      firstAttemptAt: job.firstAttemptAt ?? completion.attemptedAt,
      now,
      retryAfterMs: hints.length > 0 ? Math.max(...hints) : undefined,
    },
    schedule,
    random,
  );
  if (!next) return { ...completion, status: "expired" };
  return { ...completion, status: "retrying", runAt: next, retryUrls: retryable.map((r) => r.url) };
}

/** A delivery handed back untouched (destination disabled, or shutting down). */
export function releaseCompletion(job: ClaimedDelivery, now: Date, status: "cancelled" | "release"): DeliveryCompletion {
  return {
    destinationId: job.destinationId,
    id: job.id,
    leaseToken: job.leaseToken,
    status: status === "cancelled" ? "cancelled" : job.attemptCount > 0 ? "retrying" : "pending",
    runAt: now,
    attempted: false,
    attemptedAt: now,
    retryUrls: job.retryUrls,
    attempts: [],
    probe: job.probe,
  };
}

/**
 * A delivery put off unattempted until `runAt` (its destination's transform
 * sandbox has more waiting than it can run soon): handed back, so it holds
 * no slot meanwhile.
 */
export function deferredCompletion(job: ClaimedDelivery, runAt: Date): DeliveryCompletion {
  return { ...releaseCompletion(job, runAt, "release"), attemptedAt: runAt };
}

/**
 * A delivery whose transform failed: failed at once (retrying cannot help
 * until the transform is fixed; RetryDeliveries sends it again then), with
 * one permanent attempt carrying the error, so it shows where every failure does.
 */
export function transformFailedCompletion(
  job: ClaimedDelivery,
  destination: { revision: number },
  /** Where its attempts go, as its kind names it (the first webhook URL, the warehouse). */
  label: string,
  error: string,
  now: Date,
): DeliveryCompletion {
  return {
    ...releaseCompletion(job, now, "release"),
    status: "failed",
    attempted: true,
    retryUrls: null,
    attempts: [
      {
        urlIndex: 0,
        url: label,
        attemptedAt: now,
        outcome: "permanent",
        statusCode: null,
        error,
        latencyMs: 0,
        responseBody: null,
        destinationRevision: destination.revision,
      },
    ],
  };
}
