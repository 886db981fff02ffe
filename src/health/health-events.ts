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
  const events: HealthEvent[] = [];
  pushHealthEvents(completion, events);
  return events;
}

/**
 * healthEventsOf, appended to `events`: each event one object literal, with
 * no intermediate arrays or spreads (this runs for every recorded delivery).
 */
function pushHealthEvents(completion: DeliveryCompletion, events: HealthEvent[]): void {
  const deliveryId = completion.id;
  const at = completion.attemptedAt;
  const probe = completion.probe === true;
  if (!completion.attempted) {
    if (probe) events.push({ kind: "probe_released", deliveryId, at, probe: true });
    return;
  }
  if (completion.status === "delivered") {
    events.push({ kind: "success", deliveryId, at, probe });
    return;
  }
  if (completion.status === "failed") {
    const failed = completion.attempts.find((a) => a.outcome === "permanent");
    events.push({ kind: "permanent", deliveryId, at, probe, error: failed ? describeFailure(failed) : "failed" });
    return;
  }
  const retryable = completion.attempts.filter((a) => a.outcome === "retryable");
  const hints = retryable.map((a) => a.retryAfterMs).filter((ms): ms is number => ms !== undefined);
  events.push({
    kind: "retryable",
    deliveryId,
    at,
    probe,
    error: retryable[0] ? describeFailure(retryable[0]) : "failed",
    tooManyRequests: retryable.length > 0 && retryable.every((a) => a.statusCode === 429),
    retryAfterMs: hints.length > 0 ? Math.max(...hints) : undefined,
  });
  if (completion.status === "expired") events.push({ kind: "expired", deliveryId, at, probe });
}

/** Events per destination, each list in time order. */
export function groupHealthEvents(completions: readonly DeliveryCompletion[]): Map<string, HealthEvent[]> {
  const byDestination = new Map<string, HealthEvent[]>();
  let list: HealthEvent[] | undefined;
  let listOf: string | undefined;
  for (const completion of completions) {
    // A batch's results mostly come in runs of one destination.
    if (completion.destinationId !== listOf) {
      listOf = completion.destinationId;
      list = byDestination.get(listOf);
      if (!list) byDestination.set(listOf, (list = []));
    }
    pushHealthEvents(completion, list!);
  }
  for (const [destinationId, events] of byDestination) {
    if (events.length === 0) byDestination.delete(destinationId);
    else if (!inTimeOrder(events)) events.sort((a, b) => a.at.getTime() - b.at.getTime());
  }
  return byDestination;
}

function inTimeOrder(events: readonly HealthEvent[]): boolean {
  for (let i = 1; i < events.length; i++) if (events[i - 1]!.at.getTime() > events[i]!.at.getTime()) return false;
  return true;
}
