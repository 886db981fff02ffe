import type { RetrySchedule } from "../config.js";

export interface RetryInput {
  /** Attempts made so far, this one included (1 after the first). */
  attempts: number;
  firstAttemptAt: Date;
  now: Date;
  /** The endpoint's Retry-After, if it sent one. */
  retryAfterMs?: number | undefined;
}

/**
 * When to try again after a retryable failure, or undefined when the
 * deadline has passed (the delivery expires). Pure: the clock and the random
 * source are inputs.
 *
 * The wait starts at initialDelayMs and doubles per attempt up to maxDelayMs,
 * each shortened by up to `jitter` at random so that retries of a burst
 * spread out. A Retry-After longer than that is honoured up to
 * maxRetryAfterMs. The last retry is pulled in to the deadline itself rather
 * than skipped.
 */
export function nextRetryAt(input: RetryInput, schedule: RetrySchedule, random: () => number = Math.random): Date | undefined {
  const deadline = input.firstAttemptAt.getTime() + schedule.deadlineMs;
  const now = input.now.getTime();
  if (now >= deadline) return undefined;
  const exponent = Math.min(Math.max(input.attempts - 1, 0), 30);
  const base = Math.min(schedule.initialDelayMs * 2 ** exponent, schedule.maxDelayMs);
  let delay = base * (1 - schedule.jitter * random());
  if (input.retryAfterMs !== undefined && input.retryAfterMs > delay) {
    delay = Math.min(input.retryAfterMs, schedule.maxRetryAfterMs);
  }
  return new Date(Math.min(now + delay, deadline));
}
