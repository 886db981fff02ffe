import type { Metrics } from "../metrics.js";
import type { AttemptResult } from "../outbound/send.js";

/** What the delivery loop records. */
export interface DeliveryMetrics {
  attempted(destinationId: string, results: readonly AttemptResult[]): void;
  finished(destinationId: string, status: string): void;
  /** Deliveries held here went up or down by `change`. */
  inFlight(change: number): void;
}

const none: DeliveryMetrics = { attempted() {}, finished() {}, inFlight() {} };

/** Increments of one labelled counter not yet handed to prom-client. */
interface PendingCount {
  child: { inc(value: number): void };
  count: number;
}

interface DestinationEntry {
  latency: { observe(value: number): void };
  attempts: Map<string, PendingCount>;
  finished: Map<string, PendingCount>;
}

/**
 * Counters are counted in plain numbers per destination and label, and
 * handed to prom-client once per event-loop turn (setImmediate), one inc(n)
 * per label set: every prom-client inc validates and hashes its labels,
 * which per webhook cost more than the rest of the bookkeeping. Many
 * responses are handled in one turn under load, so a flush covers many
 * webhooks; a scrape sees every attempt finished before its own turn.
 * prom-client has no bulk observe for histograms, so latencies go straight
 * to a cached child (its labels are resolved once per destination).
 */
export function createDeliveryMetrics(metrics: Metrics | undefined): DeliveryMetrics {
  if (!metrics) return none;
  const destinations = new Map<string, DestinationEntry>();
  const dirty: PendingCount[] = [];
  let flushScheduled = false;

  function flush() {
    flushScheduled = false;
    for (const pending of dirty) {
      pending.child.inc(pending.count);
      pending.count = 0;
    }
    dirty.length = 0;
  }

  function entryOf(destinationId: string): DestinationEntry {
    let entry = destinations.get(destinationId);
    if (entry === undefined) {
      entry = { latency: metrics!.attemptLatency.labels(destinationId), attempts: new Map(), finished: new Map() };
      destinations.set(destinationId, entry);
    }
    return entry;
  }

  // The counter and its labels as arguments, not a closure: no allocation per call once a label is known.
  function count(
    counts: Map<string, PendingCount>,
    counter: { labels(destinationId: string, label: string): PendingCount["child"] },
    destinationId: string,
    label: string,
  ) {
    let pending = counts.get(label);
    if (pending === undefined) counts.set(label, (pending = { child: counter.labels(destinationId, label), count: 0 }));
    if (pending.count++ === 0) dirty.push(pending);
    if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
  }

  return {
    attempted(destinationId, results) {
      const entry = entryOf(destinationId);
      for (const r of results) {
        count(entry.attempts, metrics.attempts, destinationId, r.outcome);
        if (r.outcome !== "abandoned") entry.latency.observe(r.latencyMs / 1000);
      }
    },
    finished(destinationId, status) {
      count(entryOf(destinationId).finished, metrics.deliveriesFinished, destinationId, status);
    },
    inFlight(change) {
      if (change > 0) metrics.deliveriesInFlight.inc(change);
      else if (change < 0) metrics.deliveriesInFlight.dec(-change);
    },
  };
}
