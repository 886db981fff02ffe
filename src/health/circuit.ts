import type { CircuitConfig, RetrySchedule } from "../config.js";
import type { CircuitState, HealthRow } from "../db/queries/destination-health.js";

/**
 * The circuit breaker and destination-wide back-off as a pure state
 * machine: a destination's health row, folded over the results of one
 * batch of its deliveries. The row lives in Postgres (destination_health)
 * and is changed only under its row lock, so every worker process sees and
 * extends the same state.
 */

export type { CircuitState, HealthRow };

/** What one recorded delivery says about its endpoint. */
export type HealthEvent =
  | {
      kind: "success" | "permanent" | "retryable";
      deliveryId: string;
      at: Date;
      /** Claimed as the probe of an open circuit. */
      probe: boolean;
      /** For failures: the HTTP status or network error. */
      error?: string | undefined;
      /** A retryable failure whose answer was 429. */
      tooManyRequests?: boolean;
      /** The endpoint's Retry-After, if any. */
      retryAfterMs?: number | undefined;
    }
  /** A probe handed back without an attempt (shutdown, destination disabled). */
  | { kind: "probe_released"; deliveryId: string; at: Date; probe: true }
  /** A delivery that reached its deadline. */
  | { kind: "expired"; deliveryId: string; at: Date; probe: boolean };

export type Transition =
  | { kind: "opened"; row: HealthRow }
  | { kind: "closed"; row: HealthRow; openedAt: Date; at: Date }
  | { kind: "reopened"; row: HealthRow };

export interface HealthPolicy {
  circuit: CircuitConfig;
  retry: RetrySchedule;
}

export function initialHealth(destinationId: string): HealthRow {
  return {
    destinationId,
    state: "closed",
    consecutiveFailures: 0,
    firstFailureAt: null,
    consecutive429s: 0,
    openedAt: null,
    cooldownMs: null,
    probeAt: null,
    probeDeliveryId: null,
    probeUntil: null,
    backoffUntil: null,
    lastSuccessAt: null,
    lastFailureAt: null,
    lastError: null,
    expiredUnreported: 0,
    expiredReportedAt: null,
  };
}

const later = (a: Date | null, b: Date): Date => (a && a > b ? a : b);
const maxErrorLength = 500;

/** The row after `events` (in the order they happened), and the circuit transitions they caused. */
export function foldHealth(
  current: HealthRow,
  events: readonly HealthEvent[],
  policy: HealthPolicy,
): { row: HealthRow; transitions: Transition[] } {
  let row = { ...current };
  const transitions: Transition[] = [];
  const isTheProbe = (e: HealthEvent) => e.probe && row.state === "half_open" && row.probeDeliveryId === e.deliveryId;
  for (const e of events) {
    if (e.kind === "expired") {
      row.expiredUnreported++;
      continue;
    }
    if (e.kind === "probe_released") {
      // Nobody tried it: the probe is due again at once.
      if (isTheProbe(e)) row = { ...row, state: "open", probeDeliveryId: null, probeUntil: null };
      continue;
    }
    if (e.kind === "success" || e.kind === "permanent") {
      // Any answer that is not a retryable failure shows the endpoint is
      // up again (a 4xx is the receiver refusing that one delivery).
      if (e.kind === "success") row.lastSuccessAt = later(row.lastSuccessAt, e.at);
      else {
        row.lastFailureAt = later(row.lastFailureAt, e.at);
        row.lastError = (e.error ?? "failed").slice(0, maxErrorLength);
      }
      row.consecutiveFailures = 0;
      row.firstFailureAt = null;
      row.consecutive429s = 0;
      if (row.state !== "closed") {
        const openedAt = row.openedAt ?? e.at;
        row = { ...row, state: "closed", openedAt: null, cooldownMs: null, probeAt: null, probeDeliveryId: null, probeUntil: null };
        transitions.push({ kind: "closed", row: { ...row }, openedAt, at: e.at });
      }
      continue;
    }
    // A retryable failure.
    row.lastFailureAt = later(row.lastFailureAt, e.at);
    row.lastError = (e.error ?? "failed").slice(0, maxErrorLength);
    if (row.consecutiveFailures === 0 || !row.firstFailureAt) row.firstFailureAt = e.at;
    row.consecutiveFailures++;
    row.consecutive429s = e.tooManyRequests ? row.consecutive429s + 1 : 0;
    const backoffMs = backoffFor(e, row.consecutive429s, policy);
    if (backoffMs !== undefined) row.backoffUntil = later(row.backoffUntil, new Date(e.at.getTime() + backoffMs));
    const { circuit } = policy;
    if (
      row.state === "closed" &&
      row.consecutiveFailures >= circuit.failures &&
      e.at.getTime() - row.firstFailureAt.getTime() >= circuit.minSpanMs
    ) {
      row = {
        ...row,
        state: "open",
        openedAt: e.at,
        cooldownMs: circuit.cooldownMs,
        probeAt: new Date(e.at.getTime() + circuit.cooldownMs),
      };
      transitions.push({ kind: "opened", row: { ...row } });
    } else if (isTheProbe(e)) {
      const cooldownMs = Math.min((row.cooldownMs ?? circuit.cooldownMs) * 2, circuit.maxCooldownMs);
      row = { ...row, state: "open", cooldownMs, probeAt: new Date(e.at.getTime() + cooldownMs), probeDeliveryId: null, probeUntil: null };
      transitions.push({ kind: "reopened", row: { ...row } });
    }
  }
  return { row, transitions };
}

/**
 * How long the whole destination waits after this failure: its Retry-After
 * (capped as for one delivery), or, after a run of 429s without one, the
 * retry schedule's delay doubling with the run.
 */
function backoffFor(e: { retryAfterMs?: number | undefined }, run429: number, policy: HealthPolicy): number | undefined {
  if (e.retryAfterMs !== undefined && e.retryAfterMs > 0) return Math.min(e.retryAfterMs, policy.retry.maxRetryAfterMs);
  const threshold = policy.circuit.throttleAfter429s;
  if (run429 < threshold) return undefined;
  return Math.min(policy.retry.initialDelayMs * 2 ** Math.min(run429 - threshold, 20), policy.retry.maxDelayMs);
}
