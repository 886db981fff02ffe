import type { Clock } from "../../clock.js";

export type RateDecision = { ok: true } | { ok: false; retryAfterSeconds: number };

export interface HookRateLimiter {
  /** Takes one request's token from the source's bucket, or says when the next one is there. */
  take(sourceId: string, perSecond: number): RateDecision;
}

interface Bucket {
  tokens: number;
  at: number;
  perSecond: number;
}

/**
 * A token bucket per webhook source (`maxRequestsPerSecond`; 0 is no
 * limit), in this process: it holds a second's worth of requests (a burst
 * of at most `perSecond`) and refills continuously. Checked before the body
 * is read, so a flood costs a lookup and an answer, not 512 KB each. Each
 * API process keeps its own buckets: behind N processes a source may get up
 * to N times its limit, which keeps the limit off the database.
 * Buckets of sources not seen for a minute are dropped, so the map stays
 * the size of the sources that send.
 */
export function createHookRateLimiter(options: { clock: Clock }): HookRateLimiter {
  const buckets = new Map<string, Bucket>();
  let lastSweep = 0;

  function sweep(now: number): void {
    if (now - lastSweep < 60_000) return;
    lastSweep = now;
    for (const [id, bucket] of buckets) if (now - bucket.at > 60_000) buckets.delete(id);
  }

  return {
    take(sourceId, perSecond) {
      if (!(perSecond > 0)) return { ok: true };
      const now = options.clock.now().getTime();
      sweep(now);
      let bucket = buckets.get(sourceId);
      if (!bucket || bucket.perSecond !== perSecond) {
        // A new source, or its limit changed: start full at the new rate.
        bucket = { tokens: perSecond, at: now, perSecond };
        buckets.set(sourceId, bucket);
      } else {
        bucket.tokens = Math.min(perSecond, bucket.tokens + ((now - bucket.at) / 1000) * perSecond);
        bucket.at = now;
      }
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return { ok: true };
      }
      // Whole seconds (Retry-After's unit), at least 1.
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / perSecond)) };
    },
  };
}
