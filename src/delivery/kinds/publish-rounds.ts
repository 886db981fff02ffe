import { randomUUID } from "node:crypto";
import type { Clock } from "../../clock.js";
import type { BatchAttemptRef } from "../../db/job-table/index.js";

/** What the calls of one round share: its batch, when it started, how long it took. */
export interface RoundAttempt<T> {
  value: T;
  batch: BatchAttemptRef;
  attemptedAt: Date;
  latencyMs: number;
}

interface Round {
  batch: BatchAttemptRef;
  attemptedAt: Date;
  startedMs: number;
  publishes: Promise<unknown>[];
  /** The round's latency, once the turn that opened it ended and all its publishes settled. */
  latency: Promise<number>;
}

/**
 * Groups a broker kind's publishes into rounds: those a destination's
 * target starts in one event-loop turn (the calls the delivery loop handed
 * over together) are one batch operation, written as one attempt for all
 * of them. Each call keeps its own outcome; the round's start and its
 * duration (until its last publish settled) are every call's.
 */
export function createPublishRounds(clock: Clock) {
  const open = new Map<string, Round>();

  function roundOf(key: string): Round {
    const existing = open.get(key);
    if (existing) return existing;
    const round: Round = {
      batch: { id: randomUUID(), calls: 0 },
      attemptedAt: clock.now(),
      startedMs: performance.now(),
      publishes: [],
      latency: Promise.resolve(0),
    };
    // Closed when this turn ends: later calls open the next round.
    round.latency = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => {
        open.delete(key);
        return Promise.allSettled(round.publishes);
      })
      .then(() => Math.round(performance.now() - round.startedMs));
    open.set(key, round);
    return round;
  }

  return {
    /** Starts a publish in `key`'s round; resolves with its value once the whole round settled. */
    async publish<T>(key: string, start: () => Promise<T>): Promise<RoundAttempt<T>> {
      const round = roundOf(key);
      round.batch.calls++;
      const publish = start();
      round.publishes.push(publish);
      const value = await publish;
      const latencyMs = await round.latency;
      return { value, batch: round.batch, attemptedAt: round.attemptedAt, latencyMs };
    },
  };
}
