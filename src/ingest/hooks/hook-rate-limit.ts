import type { Clock } from "../../clock.js";

export type RateDecision = { ok: true } | { ok: false; retryAfterSeconds: number };

/**
 * Which of a source's two buckets: `verified` for requests its verifier
 * accepted (the sender's own traffic), `refused` for those it refused. A
 * stranger without the secret can only ever spend the second.
 */
export type RateBucket = "verified" | "refused";

export interface HookRateLimiter {
  /** Takes one request's token from the source's bucket, or says when the next one is there. */
  take(sourceId: string, perSecond: number, bucket?: RateBucket): RateDecision;
  /** Whether `take` would succeed now, taking nothing (checked before a body is read). */
  peek(sourceId: string, perSecond: number, bucket?: RateBucket): RateDecision;
}

interface Bucket {
  tokens: number;
  at: number;
  perSecond: number;
}

/**
 * Token buckets per webhook source (`maxRequestsPerSecond`; 0 is no
 * limit), two per source (RateBucket), in this process: each holds a
 * second's worth of requests (a burst of at most `perSecond`) and refills
 * continuously. The route decides what it can before the body is read (a
 * missing signature, an empty bucket), so a flood costs a lookup and an
 * answer, not 512 KB each. Each API process keeps its own buckets: behind
 * N processes a source may get up to N times its limit, which keeps the
 * limit off the database. Buckets not used for a minute are dropped, so
 * the map stays the size of the sources that send.
 */
export function createHookRateLimiter(options: { clock: Clock }): HookRateLimiter {
  const buckets = new Map<string, Bucket>();
  let lastSweep = 0;

  function sweep(now: number): void {
    if (now - lastSweep < 60_000) return;
    lastSweep = now;
    for (const [id, bucket] of buckets) if (now - bucket.at > 60_000) buckets.delete(id);
  }

  /** The bucket refilled to now; undefined when there is no limit. */
  function refilled(key: string, perSecond: number): Bucket | undefined {
    if (!(perSecond > 0)) return undefined;
    const now = options.clock.now().getTime();
    sweep(now);
    let bucket = buckets.get(key);
    if (!bucket || bucket.perSecond !== perSecond) {
      // A new source, or its limit changed: start full at the new rate.
      bucket = { tokens: perSecond, at: now, perSecond };
      buckets.set(key, bucket);
    } else {
      bucket.tokens = Math.min(perSecond, bucket.tokens + ((now - bucket.at) / 1000) * perSecond);
      bucket.at = now;
    }
    return bucket;
  }

  function decide(bucket: Bucket | undefined, take: boolean): RateDecision {
    if (!bucket) return { ok: true };
    if (bucket.tokens >= 1) {
      if (take) bucket.tokens -= 1;
      return { ok: true };
    }
    // Whole seconds (Retry-After's unit), at least 1.
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / bucket.perSecond)) };
  }

  return {
    take: (sourceId, perSecond, bucket = "verified") => decide(refilled(`${bucket}:${sourceId}`, perSecond), true),
    peek: (sourceId, perSecond, bucket = "verified") => decide(refilled(`${bucket}:${sourceId}`, perSecond), false),
  };
}
