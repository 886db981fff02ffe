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
  // In this registry only, not prom-client's global one: each server (and test) has its own.
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
    new Counter<L>({ name, help, labelNames, registers: [registry] });
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
    new Gauge<L>({ name, help, labelNames, registers: [registry] });
  return {
    registry,
    callsAccepted: counter("waypost_calls_accepted_total", "Calls acknowledged, by type (duplicates included).", ["type"]),
    callsRejected: counter("waypost_calls_rejected_total", "Calls refused as invalid or oversized."),
    callsFiltered: counter(
      "waypost_calls_filtered_total",
      "Calls a destination did not get because of its rules: reason filter, consent or subscriptions (when routed), or transform (returned null when sent).",
      ["destination_id", "reason"],
    ),
    transformDuration: new Histogram({
      name: "waypost_transform_duration_seconds",
      help: "Time one call spent in a destination's transform sandbox.",
      buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1],
      registers: [registry],
    }),
    transformSandboxFailures: counter(
      "waypost_transform_sandbox_failures_total",
      "Calls a destination's transform sandbox failed and was thrown away for: reason timeout, out_of_memory or worker_ended (its worker thread was ended under it).",
      ["destination_id", "reason"],
    ),
    transformDeferred: counter(
      "waypost_transform_deferred_total",
      "Deliveries handed back unsent for a second because their destination's transform sandbox had more waiting than it could run soon.",
      ["destination_id"],
    ),
    deliveriesFinished: counter(
      "waypost_deliveries_total",
      "Deliveries that reached a state after an attempt (delivered, retrying, failed, expired, cancelled).",
      ["destination_id", "status"],
    ),
    attempts: counter("waypost_delivery_attempts_total", "Requests to webhook URLs, by outcome.", ["destination_id", "outcome"]),
    attemptLatency: new Histogram({
      name: "waypost_delivery_attempt_duration_seconds",
      help: "Time from sending a webhook request to its outcome.",
      labelNames: ["destination_id"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    planViolations: counter(
      "waypost_plan_violations_total",
      "Calls' violations of their source's tracking plan, by kind (recorded in every mode but off).",
      ["source_id", "kind"],
    ),
    deliveriesInFlight: gauge("waypost_deliveries_in_flight", "Deliveries claimed by this process and not yet recorded."),
    destinationCircuitOpen: gauge(
      "waypost_destination_circuit_open",
      "1 while the destination's circuit breaker holds its deliveries back (probe in flight included), else 0.",
      ["destination_id"],
    ),
    warehouseTypeMismatches: counter(
      "waypost_warehouse_type_mismatches_total",
      "Values a warehouse destination stored as NULL because they did not fit their column's type.",
      ["destination_id"],
    ),
    warehouseRefusedColumns: counter(
      "waypost_warehouse_refused_columns_total",
      "Values a warehouse destination kept in its discards table because their column could not be added (past the column cap, or refused by Postgres).",
      ["destination_id"],
    ),
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
    hookRequests: counter(
      "waypost_hook_requests_total",
      "Requests to webhook sources' inbound URLs, by result: accepted, duplicate, unauthorized, not_found (source_id empty), rate_limited, too_large, timeout, unsupported_encoding, method_not_allowed (source_id empty), unavailable, client_gone.",
      ["source_id", "result"],
    ),
    hookRequestsProcessed: counter(
      "waypost_hook_requests_processed_total",
      "Webhook sources' stored requests turned into calls (status processed) or not (status failed: the transform failed or made an invalid call).",
      ["source_id", "status"],
    ),
    traceSpansDropped: counter(
      "waypost_trace_spans_dropped_total",
      "Spans never exported, with tracing on: queue_full (the export queue had no room) or export_failed (the collector refused them or was unreachable).",
      ["reason"],
    ),
  };
}
