import type { DeliveryConfig } from "../config.js";
import { heldPerDestination } from "./held-rounds.js";

/** A claimed delivery as the scheduler sees it: which destination's slots it takes. */
export interface Schedulable {
  destinationId: string;
}

export interface SchedulerOptions {
  config: Pick<DeliveryConfig, "concurrency" | "perDestinationConcurrency" | "leaseMs" | "timeoutMs">;
  /** Most deliveries one claim takes. */
  maxClaim: number;
  /**
   * A destination's own in-flight limit, which is also all it holds here
   * (a batching kind takes a batch's worth at once); undefined: the
   * configured per-destination concurrency and rounds. Such a destination's
   * deliveries are bounded by it, not by the process's `concurrency`.
   */
  limitOf?: (destinationId: string) => number | undefined;
}

/** What the next claim may take: in all, and per destination already held here. */
export interface ClaimPlan {
  limit: number;
  /** Room left per destination that has deliveries here (absent: the full per-destination hold). */
  room: Map<string, number>;
  perDestinationLimit: number;
}

export interface Scheduler<T extends Schedulable> {
  /** The next claim's limits; undefined when every slot of the process is taken. */
  planClaim(): ClaimPlan | undefined;
  /**
   * Takes a claim's deliveries under the plan it was made with. Returns
   * those to start now (their destination has a free concurrency slot; the
   * rest wait here for one) and whether the claim came back full, so more
   * may be due at once.
   */
  accept(items: readonly T[], plan: ClaimPlan): { start: T[]; full: boolean };
  /**
   * One delivery of the destination finished. Returns the one to start in
   * its slot (the destination's oldest waiting), and whether to claim now,
   * ahead of the senders.
   */
  finished(destinationId: string): { next: T | undefined; claimAhead: boolean };
  /** Takes every waiting delivery out (on stop: they are handed back unsent). */
  drainWaiting(): T[];
  /** Deliveries held here, in flight and waiting. */
  readonly held: number;
}

interface Slots<T> {
  inFlight: number;
  waiting: T[];
  /** A destination with its own limit (a batching kind): its deliveries do not take the process's slots. */
  own: boolean;
}

/**
 * The delivery loop's arithmetic, with no I/O: slots per destination, the
 * rounds a destination may hold here, and when to claim ahead. The loop
 * asks it what to claim, gives it what was claimed, tells it what finished,
 * and starts what it says; tests drive it the way retry-policy's are driven.
 *
 * - A process holds at most `concurrency` deliveries, in flight and waiting,
 *   besides those of destinations with a limit of their own (a batching
 *   kind's: a warehouse's two batches, a broker's publish window), which
 *   that limit bounds: a batch's size does not depend on the process's
 *   slots, and a full process still fills a warehouse's batch.
 * - A destination has at most `perDestinationConcurrency` in flight, and
 *   holds at most heldPerDestination (several rounds of that, so claims are
 *   big and cheap, but never more than half the process's slots, so a
 *   destination whose endpoint hangs leaves the rest to the others).
 * - Claims go ahead of the senders: once the last claim was cut short and a
 *   quarter of a destination's room (or of the process's slots, when those
 *   cut it short) is free again, the next claim's round trip overlaps the
 *   sends still queued.
 */
/** Most batching destinations remembered (each adds an entry to every claim's room). */
const maxBatching = 1_000;

export function createScheduler<T extends Schedulable>(options: SchedulerOptions): Scheduler<T> {
  const { config, maxClaim } = options;
  const perDestinationHeld = heldPerDestination(config);
  const claimAheadRoom = Math.max(1, Math.floor(perDestinationHeld / 4));
  const claimAheadSlots = Math.max(1, Math.floor(config.concurrency / 4));
  const slots = new Map<string, Slots<T>>();
  let held = 0;
  // Of `held`, the deliveries of destinations with their own limit (outside the process's slots).
  let heldOwn = 0;
  // The last claim was cut short (by the process's slots or a destination's
  // room): more may be due than it took.
  let capacityBound = false;
  // The last claim took all the process's free slots allowed.
  let slotsBound = false;
  // Destinations of a batching kind seen here, with their own limit. A claim
  // offers each its whole limit even while nothing of it is held here:
  // offered the webhook hold instead, a warehouse got one small claim per
  // flush interval (a batch never filled; 354 calls/s from a backlog).
  const batching = new Map<string, number>();

  const heldOf = (destinationId: string) => options.limitOf?.(destinationId) ?? perDestinationHeld;
  const inFlightOf = (destinationId: string) => options.limitOf?.(destinationId) ?? config.perDestinationConcurrency;
  const roomOf = (destinationId: string, entry: Slots<T>) => Math.max(0, heldOf(destinationId) - entry.inFlight - entry.waiting.length);

  function noteBatching(destinationId: string) {
    const limit = options.limitOf?.(destinationId);
    if (limit === undefined) batching.delete(destinationId);
    else if (batching.size < maxBatching || batching.has(destinationId)) batching.set(destinationId, limit);
  }

  function slotsOf(destinationId: string): Slots<T> {
    let entry = slots.get(destinationId);
    if (!entry) slots.set(destinationId, (entry = { inFlight: 0, waiting: [], own: options.limitOf?.(destinationId) !== undefined }));
    return entry;
  }

  return {
    get held() {
      return held;
    },
    planClaim() {
      const free = config.concurrency - (held - heldOwn);
      const room = new Map<string, number>();
      for (const [id, limit] of batching) room.set(id, limit);
      for (const [id, entry] of slots) room.set(id, roomOf(id, entry));
      let ownRoom = 0;
      for (const id of batching.keys()) ownRoom += room.get(id) ?? 0;
      if (free <= 0) {
        capacityBound = true;
        if (ownRoom === 0) return undefined;
        // The process's slots are taken: only destinations with their own limit may take more.
        for (const id of room.keys()) if (!batching.has(id)) room.set(id, 0);
        return { limit: Math.min(ownRoom, maxClaim), room, perDestinationLimit: 0 };
      }
      if (ownRoom === 0) return { limit: Math.min(free, maxClaim), room, perDestinationLimit: perDestinationHeld };
      // The claim's limit has room for both: no other destination may take more than the process's free slots.
      for (const [id, n] of room) if (!batching.has(id)) room.set(id, Math.min(n, free));
      return { limit: Math.min(free + ownRoom, maxClaim), room, perDestinationLimit: Math.min(perDestinationHeld, free) };
    },
    accept(items, plan) {
      const start: T[] = [];
      const claimed = new Map<string, number>();
      for (const item of items) {
        held++;
        if (!claimed.has(item.destinationId)) noteBatching(item.destinationId);
        claimed.set(item.destinationId, (claimed.get(item.destinationId) ?? 0) + 1);
        const entry = slotsOf(item.destinationId);
        if (entry.own) heldOwn++;
        if (entry.inFlight < inFlightOf(item.destinationId)) {
          entry.inFlight++;
          start.push(item);
        } else {
          entry.waiting.push(item);
        }
      }
      const full = items.length === plan.limit;
      slotsBound = full;
      capacityBound =
        full ||
        [...plan.room].some(([id, free]) => free === 0 && slots.has(id)) ||
        [...claimed].some(([id, n]) => n >= (plan.room.get(id) ?? plan.perDestinationLimit));
      return { start, full };
    },
    finished(destinationId) {
      const entry = slots.get(destinationId);
      if (!entry) throw new Error(`scheduler: no delivery of destination ${destinationId} was in flight`);
      entry.inFlight--;
      held--;
      if (entry.own) heldOwn--;
      const next = entry.waiting.shift();
      if (next) entry.inFlight++;
      else if (entry.inFlight === 0) slots.delete(destinationId);
      const claimAhead =
        capacityBound &&
        (roomOf(destinationId, entry) >= claimAheadRoom || (slotsBound && config.concurrency - (held - heldOwn) >= claimAheadSlots));
      return { next, claimAhead };
    },
    drainWaiting() {
      const drained: T[] = [];
      for (const [id, entry] of slots) {
        if (entry.own) heldOwn -= entry.waiting.length;
        drained.push(...entry.waiting.splice(0));
        if (entry.inFlight === 0) slots.delete(id);
      }
      held -= drained.length;
      return drained;
    },
  };
}
