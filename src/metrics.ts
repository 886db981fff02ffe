import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** Prometheus metrics (prom-client: the standard Node client, text format built in). */
export interface Metrics {
  registry: Registry;
  callsAccepted: Counter<"type">;
  callsRejected: Counter;
  deliveriesFinished: Counter<"destination_id" | "status">;
  attempts: Counter<"destination_id" | "outcome">;
  attemptLatency: Histogram<"destination_id">;
  deliveriesInFlight: Gauge;
  destinationCircuitOpen: Gauge<"destination_id">;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "waypost_process_" });
  return {
    registry,
    callsAccepted: new Counter({
      name: "waypost_calls_accepted_total",
      help: "Calls acknowledged, by type (duplicates included).",
      labelNames: ["type"],
      registers: [registry],
    }),
    callsRejected: new Counter({
      name: "waypost_calls_rejected_total",
      help: "Calls refused as invalid or oversized.",
      registers: [registry],
    }),
    deliveriesFinished: new Counter({
      name: "waypost_deliveries_total",
      help: "Deliveries that reached a state after an attempt (delivered, retrying, failed, expired, cancelled).",
      labelNames: ["destination_id", "status"],
      registers: [registry],
    }),
    attempts: new Counter({
      name: "waypost_delivery_attempts_total",
      help: "Requests to webhook URLs, by outcome.",
      labelNames: ["destination_id", "outcome"],
      registers: [registry],
    }),
    attemptLatency: new Histogram({
      name: "waypost_delivery_attempt_duration_seconds",
      help: "Time from sending a webhook request to its outcome.",
      labelNames: ["destination_id"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    deliveriesInFlight: new Gauge({
      name: "waypost_deliveries_in_flight",
      help: "Deliveries claimed by this process and not yet recorded.",
      registers: [registry],
    }),
    destinationCircuitOpen: new Gauge({
      name: "waypost_destination_circuit_open",
      help: "1 while the destination's circuit breaker holds its deliveries back (probe in flight included), else 0.",
      labelNames: ["destination_id"],
      registers: [registry],
    }),
  };
}
