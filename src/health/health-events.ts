import type { DeliveryCompletion } from "../db/job-table/index.js";
import type { AttemptResult } from "../outbound/send.js";
import type { HealthEvent } from "./circuit.js";

/** A failed attempt in a few words, for lastError: never the response body. */
export function describeFailure(attempt: AttemptResult): string {
  if (attempt.error) return attempt.error;
  return attempt.statusCode !== null ? `HTTP ${attempt.statusCode}` : attempt.outcome;
}

/**
 * What a recorded delivery says about its endpoint, in the order things
 * happened: its attempt (if one was made), then its expiry.
 */
export function healthEventsOf(completion: DeliveryCompletion): HealthEvent[] {
  const base = { deliveryId: completion.id, at: completion.attemptedAt, probe: completion.probe === true };
  if (!completion.attempted) {
    return completion.probe ? [{ ...base, kind: "probe_released", probe: true }] : [];
  }
  if (completion.status === "delivered") return [{ ...base, kind: "success" }];
  if (completion.status === "failed") {
    const failed = completion.attempts.find((a) => a.outcome === "permanent");
    return [{ ...base, kind: "permanent", error: failed ? describeFailure(failed) : "failed" }];
  }
  const retryable = completion.attempts.filter((a) => a.outcome === "retryable");
  const hints = retryable.map((a) => a.retryAfterMs).filter((ms): ms is number => ms !== undefined);
  const events: HealthEvent[] = [
    {
      ...base,
      kind: "retryable",
      error: retryable[0] ? describeFailure(retryable[0]) : "failed",
      tooManyRequests: retryable.length > 0 && retryable.every((a) => a.statusCode === 429),
      retryAfterMs: hints.length > 0 ? Math.max(...hints) : undefined,
    },
  ];
  if (completion.status === "expired") events.push({ ...base, kind: "expired" });
  return events;
}

/** Events per destination, each list in time order. */
export function groupHealthEvents(completions: readonly DeliveryCompletion[]): Map<string, HealthEvent[]> {
  const byDestination = new Map<string, HealthEvent[]>();
  for (const completion of completions) {
    const events = healthEventsOf(completion);
    if (events.length === 0) continue;
    let list = byDestination.get(completion.destinationId);
    if (!list) byDestination.set(completion.destinationId, (list = []));
    list.push(...events);
  }
  for (const list of byDestination.values()) list.sort((a, b) => a.at.getTime() - b.at.getTime());
  return byDestination;
}
