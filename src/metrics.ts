import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** Prometheus metrics (prom-client: the standard Node client, text format built in). */
export interface Metrics {
  registry: Registry;
  callsAccepted: Counter<"type">;
  callsRejected: Counter;
  callsFiltered: Counter<"destination_id" | "reason">;
  transformDuration: Histogram;
  transformSandboxFailures: Counter<"destination_id" | "reason">;
  transformDeferred: Counter<"destination_id">;
  deliveriesFinished: Counter<"destination_id" | "status">;
  attempts: Counter<"destination_id" | "outcome">;
  attemptLatency: Histogram<"destination_id">;
  deliveriesInFlight: Gauge;
  destinationCircuitOpen: Gauge<"destination_id">;
  destinationBacklog: Gauge<"destination_id">;
  planViolations: Counter<"source_id" | "kind">;
  warehouseTypeMismatches: Counter<"destination_id">;
  warehouseRefusedColumns: Counter<"destination_id">;
  traceSpansDropped: Counter<"reason">;
  hookRequests: Counter<"source_id" | "result">;
  hookRequestsProcessed: Counter<"source_id" | "status">;
}

export interface MetricsOptions {
  /** Unfinished deliveries by destination, read at each scrape; without it the backlog gauge stays empty. */
  backlog?: () => Promise<ReadonlyMap<string, number> | undefined>;
}

export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  // prom-client's names already start with process_ or nodejs_: the prefix
  // makes them waypost_process_cpu_seconds_total, waypost_nodejs_heap_size_total_bytes...
  collectDefaultMetrics({ register: registry, prefix: "waypost_" });
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
    callsFiltered: new Counter({
      name: "waypost_calls_filtered_total",
      help: "Calls a destination did not get because of its rules: reason filter, consent or subscriptions (when routed), or transform (returned null when sent).",
      labelNames: ["destination_id", "reason"],
      registers: [registry],
    }),
    transformDuration: new Histogram({
      name: "waypost_transform_duration_seconds",
      help: "Time one call spent in a destination's transform sandbox.",
      buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1],
      registers: [registry],
    }),
    transformSandboxFailures: new Counter({
      name: "waypost_transform_sandbox_failures_total",
      help: "Calls a destination's transform sandbox failed and was thrown away for: reason timeout, out_of_memory or worker_ended (its worker thread was ended under it).",
      labelNames: ["destination_id", "reason"],
      registers: [registry],
    }),
    transformDeferred: new Counter({
      name: "waypost_transform_deferred_total",
      help: "Deliveries handed back unsent for a second because their destination's transform sandbox had more waiting than it could run soon.",
      labelNames: ["destination_id"],
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
    planViolations: new Counter({
      name: "waypost_plan_violations_total",
      help: "Calls' violations of their source's tracking plan, by kind (recorded in every mode but off).",
      labelNames: ["source_id", "kind"],
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
    warehouseTypeMismatches: new Counter({
      name: "waypost_warehouse_type_mismatches_total",
      help: "Values a warehouse destination stored as NULL because they did not fit their column's type.",
      labelNames: ["destination_id"],
      registers: [registry],
    }),
    warehouseRefusedColumns: new Counter({
      name: "waypost_warehouse_refused_columns_total",
      help: "Values a warehouse destination kept in its discards table because their column could not be added (past the column cap, or refused by Postgres).",
      labelNames: ["destination_id"],
      registers: [registry],
    }),
    destinationBacklog: new Gauge({
      name: "waypost_destination_backlog",
      help: "Deliveries of the destination not finished yet (pending + retrying), counted in the database when scraped: the same in every process.",
      labelNames: ["destination_id"],
      registers: [registry],
      async collect() {
        if (!options.backlog) return;
        const counts = await options.backlog();
        // Deleted destinations go; the rest are all set again.
        this.reset();
        for (const [destinationId, count] of counts ?? []) this.set({ destination_id: destinationId }, count);
      },
    }),
    hookRequests: new Counter({
      name: "waypost_hook_requests_total",
      help: "Requests to webhook sources' inbound URLs, by result: accepted, duplicate, unauthorized, not_found (source_id empty), rate_limited, too_large, timeout, unsupported_encoding, method_not_allowed (source_id empty), unavailable, client_gone.",
      labelNames: ["source_id", "result"],
      registers: [registry],
    }),
    hookRequestsProcessed: new Counter({
      name: "waypost_hook_requests_processed_total",
      help: "Webhook sources' stored requests turned into calls (status processed) or not (status failed: the transform failed or made an invalid call).",
      labelNames: ["source_id", "status"],
      registers: [registry],
    }),
    traceSpansDropped: new Counter({
      name: "waypost_trace_spans_dropped_total",
      help: "Spans never exported, with tracing on: queue_full (the export queue had no room) or export_failed (the collector refused them or was unreachable).",
      labelNames: ["reason"],
      registers: [registry],
    }),
  };
}
