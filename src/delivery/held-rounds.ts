import type { DeliveryConfig } from "../config.js";

/**
 * Rounds of a destination's concurrency one process holds: as many as fit in
 * half a lease at the endpoint timeout (2 to 8; 6 with the defaults, one in
 * flight and five waiting), so the last waiting delivery is sent well inside
 * its lease even if every request before it times out. (Its lease is also
 * kept alive while it waits, and checked before it is sent: lease-keeper.ts;
 * this sizing keeps that check from having to extend it.)
 */
export function heldRounds(leaseMs: number, timeoutMs: number): number {
  return Math.min(8, Math.max(2, Math.floor(leaseMs / (2 * timeoutMs))));
}

/**
 * Deliveries one destination may have in a process, in flight and waiting:
 * heldRounds of its concurrency, but never more
 * than half the process's slots (or one round, if that is more), so a
 * destination whose endpoint hangs leaves the other half to the rest.
 */
export function heldPerDestination(
  config: Pick<DeliveryConfig, "perDestinationConcurrency" | "concurrency" | "leaseMs" | "timeoutMs">,
): number {
  return Math.min(
    config.perDestinationConcurrency * heldRounds(config.leaseMs, config.timeoutMs),
    Math.max(config.perDestinationConcurrency, Math.floor(config.concurrency / 2)),
  );
}
