import type { RetrySchedule } from "../config.js";
import type { AttemptResult, ClaimedDelivery, DeliveryCompletion } from "../db/job-table/index.js";
import type { CompletionRule } from "./kinds/kind.js";
import { nextRetryAt } from "./retry-policy.js";

// The kind-independent end of a delivery: whatever the kind, its attempts
// decide the delivery's next state here (a kind prepares and delivers:
// src/delivery/kinds/).

/**
 * The delivery's next state from its attempts, by its kind's rule
 * (kinds/kind.ts, CompletionRule). The completion takes `results` as its
 * attempt list (the caller's own array, not copied): one object per
 * delivery, built once, as this runs for every webhook.
 */
export function decideCompletion(
  job: ClaimedDelivery,
  results: AttemptResult[],
  rule: CompletionRule,
  now: Date,
  schedule: RetrySchedule,
  random?: () => number,
): DeliveryCompletion {
  const attemptedAt = results[0]?.attemptedAt ?? now;
  const completion: DeliveryCompletion = {
    destinationId: job.destinationId,
    id: job.id,
    leaseToken: job.leaseToken,
    status: "delivered",
    runAt: now,
    attempted: true,
    attemptedAt,
    retryUrls: null,
    attempts: results,
    probe: job.probe,
  };
  let retryable = 0;
  let retryAfterMs: number | undefined;
  // Every part must succeed (not any one request, as for a webhook's URLs):
  // one final failure fails the call, a retryable one retries it (and the
  // retry runs only the parts that have not succeeded). No attempt at all
  // proves no part, whatever the rule.
  const allMustSucceed = rule === "every-part" && results.length > 0;
  let failed = false;
  for (const r of results) {
    if (r.outcome === "success") {
      if (allMustSucceed) continue;
      return completion;
    }
    if (r.outcome !== "retryable") {
      if (r.outcome === "permanent") failed = true;
      continue;
    }
    retryable++;
    if (r.retryAfterMs !== undefined) retryAfterMs = retryAfterMs === undefined ? r.retryAfterMs : Math.max(retryAfterMs, r.retryAfterMs);
  }
  if (allMustSucceed && !failed && retryable === 0) return completion;
  if (retryable === 0 || (allMustSucceed && failed)) {
    completion.status = "failed";
    return completion;
  }
  const next = nextRetryAt(
    { attempts: job.attemptCount + 1, firstAttemptAt: job.firstAttemptAt ?? attemptedAt, now, retryAfterMs },
    schedule,
    random,
  );
  if (!next) {
    completion.status = "expired";
    return completion;
  }
  completion.status = "retrying";
  completion.runAt = next;
  completion.retryUrls = results.filter((r) => r.outcome === "retryable").map((r) => r.url);
  return completion;
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
