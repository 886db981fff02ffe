import type { Metrics } from "../metrics.js";
import type { AttemptResult } from "./send.js";

/** What the delivery loop records. Label children are cached: a label lookup per request costs on this hot path. */
export interface DeliveryMetrics {
  attempted(destinationId: string, results: readonly AttemptResult[]): void;
  finished(destinationId: string, status: string): void;
  inFlight(change: 1 | -1): void;
}

const none: DeliveryMetrics = { attempted() {}, finished() {}, inFlight() {} };

function cached<T>(make: (...labels: string[]) => T): (...labels: string[]) => T {
  const children = new Map<string, T>();
  return (...labels) => {
    const key = labels.join("\n");
    let child = children.get(key);
    if (child === undefined) children.set(key, (child = make(...labels)));
    return child;
  };
}

export function createDeliveryMetrics(metrics: Metrics | undefined): DeliveryMetrics {
  if (!metrics) return none;
  const attempts = cached((destinationId, outcome) => metrics.attempts.labels(destinationId!, outcome!));
  const latency = cached((destinationId) => metrics.attemptLatency.labels(destinationId!));
  const finished = cached((destinationId, status) => metrics.deliveriesFinished.labels(destinationId!, status!));
  return {
    attempted(destinationId, results) {
      for (const r of results) {
        attempts(destinationId, r.outcome).inc();
        if (r.outcome !== "abandoned") latency(destinationId).observe(r.latencyMs / 1000);
      }
    },
    finished(destinationId, status) {
      finished(destinationId, status).inc();
    },
    inFlight(change) {
      if (change > 0) metrics.deliveriesInFlight.inc();
      else metrics.deliveriesInFlight.dec();
    },
  };
}
