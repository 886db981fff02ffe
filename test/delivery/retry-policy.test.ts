import { expect, test } from "vitest";
import { defaultRetrySchedule } from "../../src/config.js";
import { nextRetryAt } from "../../src/delivery/retry-policy.js";
import { parseRetryAfter } from "../../src/outbound/retry-after.js";

const first = new Date("2026-01-01T00:00:00Z");
const noJitter = () => 0;
const at = (ms: number) => new Date(first.getTime() + ms);

test("first retry after about 10 s, doubling, each wait at most 30 minutes", () => {
  const waits = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((attempts) => {
    const now = at(1000);
    return nextRetryAt({ attempts, firstAttemptAt: first, now }, defaultRetrySchedule, noJitter)!.getTime() - now.getTime();
  });
  expect(waits.slice(0, 5)).toEqual([10_000, 20_000, 40_000, 80_000, 160_000]);
  expect(Math.max(...waits)).toBe(30 * 60_000);
});

test("jitter only shortens the wait, by at most its fraction", () => {
  const now = at(0);
  const shortest = nextRetryAt({ attempts: 1, firstAttemptAt: first, now }, defaultRetrySchedule, () => 0.999999)!;
  expect(shortest.getTime() - now.getTime()).toBeGreaterThanOrEqual(10_000 * (1 - defaultRetrySchedule.jitter));
  expect(shortest.getTime() - now.getTime()).toBeLessThan(10_000);
});

test("no retry at or after 4 hours from the first attempt; the last one lands on the deadline", () => {
  const deadline = 4 * 3_600_000;
  expect(nextRetryAt({ attempts: 20, firstAttemptAt: first, now: at(deadline) }, defaultRetrySchedule, noJitter)).toBeUndefined();
  const late = nextRetryAt({ attempts: 20, firstAttemptAt: first, now: at(deadline - 60_000) }, defaultRetrySchedule, noJitter);
  expect(late?.getTime()).toBe(at(deadline).getTime());
});

test("Retry-After is honoured when longer, capped at its maximum", () => {
  const now = at(0);
  const hinted = nextRetryAt({ attempts: 1, firstAttemptAt: first, now, retryAfterMs: 120_000 }, defaultRetrySchedule, noJitter);
  expect(hinted!.getTime() - now.getTime()).toBe(120_000);
  const capped = nextRetryAt({ attempts: 1, firstAttemptAt: first, now, retryAfterMs: 10 * 3_600_000 }, defaultRetrySchedule, noJitter);
  expect(capped!.getTime() - now.getTime()).toBe(defaultRetrySchedule.maxRetryAfterMs);
  const shorter = nextRetryAt({ attempts: 1, firstAttemptAt: first, now, retryAfterMs: 1_000 }, defaultRetrySchedule, noJitter);
  expect(shorter!.getTime() - now.getTime()).toBe(10_000);
});

test("Retry-After parses seconds and HTTP dates", () => {
  expect(parseRetryAfter("30", first)).toBe(30_000);
  expect(parseRetryAfter(new Date(first.getTime() + 5_000).toUTCString(), first)).toBe(5_000);
  expect(parseRetryAfter("soon", first)).toBeUndefined();
  expect(parseRetryAfter(undefined, first)).toBeUndefined();
});
