// @ts-check
import pg from "pg";
import { createSourceAndDestination, rpc } from "../lib/admin.mjs";
import { startCpuMeter } from "../lib/cpu.mjs";
import { trackingClient } from "../lib/load.mjs";
import { startService } from "../lib/service.mjs";
import { report, summarize } from "../lib/stats.mjs";
import { emptyCall } from "../../dist/src/calls/call.js";
import { checkCall } from "../../dist/src/plans/check-call.js";
import { compilePlan } from "../../dist/src/plans/compile-plan.js";
import { readPlanDocument } from "../../dist/src/plans/plan-document.js";
import { runFor } from "./ingest.mjs";
import { checkTarget } from "../lib/targets.mjs";

/**
 * A tracking plan of `count` events, each with a few typed properties and
 * required ones and a pattern; "Order Completed" (the event the load
 * sends) is one of them, described so that every call of the load
 * satisfies it.
 * @param {number} count
 */
export function benchPlan(count) {
  /** @type {Record<string, object>} */
  const events = {
    "Order Completed": {
      properties: {
        type: "object",
        properties: {
          // A pattern on every call, so the linear-time regex engine's cost is in the figure.
          orderId: { type: "string", pattern: "^[0-9]+$" },
          total: { type: "number", minimum: 0 },
          currency: { type: "string", enum: ["EUR", "USD"] },
        },
        required: ["orderId", "total", "currency"],
      },
    },
  };
  for (let i = 1; i < count; i++) {
    events[`Event ${i}`] = {
      properties: {
        type: "object",
        properties: {
          id: { type: "string", pattern: "^[a-z0-9-]{1,64}$" },
          value: { type: "number" },
          flag: { type: "boolean" },
          tags: { type: "array", items: { type: "string" } },
        },
        required: ["id"],
      },
    };
  }
  return { name: "bench", allowUnplannedEvents: false, events };
}

/**
 * The check alone, in this process: µs per call of the load's shape (its
 * properties as JSON text, as a binary request gives them), with no other
 * work on the clock. Steadier than the difference of two noisy rates.
 * @param {number} calls
 */
function checkMicros(calls) {
  const compiled = compilePlan(readPlanDocument(benchPlan(50)));
  const call = {
    ...emptyCall("track"),
    userId: "user-1",
    event: "Order Completed",
    structJson: { properties: '{"orderId":"1","total":42.5,"currency":"EUR"}' },
  };
  let violations = 0;
  const start = performance.now();
  for (let i = 0; i < calls; i++) violations += checkCall(compiled, call, false).violations.length;
  const us = ((performance.now() - start) * 1000) / calls;
  if (violations !== 0) throw new Error("the bench's call does not satisfy the bench's plan");
  return Math.round(us * 100) / 100;
}

/**
 * Ingest with a 50-event tracking plan in block mode beside ingest with no
 * plan, same service, same run: two sources, windows alternating between
 * them (no plan, plan, plan, no plan), so that drift on the shared machine
 * falls on both. Every call of the load satisfies the plan, so both store
 * the same rows; the difference is the cost of checking.
 * @param {{ db: import("../lib/postgres.mjs").Database, sink: import("../lib/sink.mjs").Sink, durationMs: number, concurrency?: number, batchSize?: number }} options
 */
export async function planIngestScenario({
  db,
  sink,
  durationMs,
  concurrency = Number(process.env.BENCH_INGEST_CONCURRENCY ?? 8),
  batchSize = 100,
}) {
  const service = await startService(db.url, { WAYPOST_ROLE: "api" });
  const plain = await createSourceAndDestination(service.url, `${sink.url}/ok`, { name: "no-plan" });
  const planned = await createSourceAndDestination(service.url, `${sink.url}/ok`, { name: "plan" });
  await rpc(service.url, "TrackingPlanService/SetTrackingPlan", {
    sourceId: planned.source.id,
    plan: benchPlan(50),
    mode: "PLAN_MODE_BLOCK",
  });
  const clients = {
    plain: trackingClient(service.url, plain.source.writeKey),
    planned: trackingClient(service.url, planned.source.writeKey),
  };
  await runFor(clients.plain, 1_000, concurrency, batchSize);
  await runFor(clients.planned, 1_000, concurrency, batchSize);
  const pool = new pg.Pool({ connectionString: db.url, max: 1 });
  /** @type {Record<"plain" | "planned", { events: number, ms: number, latencies: number[], cpu: number }>} */
  const totals = { plain: { events: 0, ms: 0, latencies: [], cpu: 0 }, planned: { events: 0, ms: 0, latencies: [], cpu: 0 } };
  // A B B A: drift over the run (the tables growing, the host's other work) falls on both alike.
  for (const which of /** @type {const} */ (["plain", "planned", "planned", "plain"])) {
    const meter = await startCpuMeter(pool, { service: service.pid });
    const run = await runFor(clients[which], durationMs / 2, concurrency, batchSize);
    const { used } = await meter.stop();
    totals[which].events += run.events;
    totals[which].ms += run.elapsedMs;
    totals[which].latencies.push(...run.latencies);
    totals[which].cpu += used.service ?? 0;
  }
  const rejected = await pool.query("SELECT count(*)::int AS n FROM plan_violations");
  // The plan is in force: a call that breaks it is refused.
  const refused = await rpc(
    service.url,
    "TrackingService/Track",
    { track: { userId: "u", event: "Order Completed", properties: { orderId: "1", total: "42.5", currency: "EUR" } } },
    planned.source.writeKey,
  ).then(
    () => false,
    (/** @type {Error} */ error) => error.message.includes("violates the tracking plan"),
  );
  await pool.end();
  clients.plain.close();
  clients.planned.close();
  await service.stop();
  const rate = (/** @type {"plain" | "planned"} */ which) => Math.round((totals[which].events / totals[which].ms) * 1000);
  const cpu = (/** @type {"plain" | "planned"} */ which) => Math.round((totals[which].cpu * 1e6) / totals[which].events);
  report({
    scenario: "plan-ingest",
    plan_events: 50,
    mode: "block",
    events_per_s: { no_plan: rate("plain"), plan: rate("planned") },
    ratio_plan_to_no_plan: Math.round((rate("planned") / rate("plain")) * 100) / 100,
    cpu_us_per_call_service: { no_plan: cpu("plain"), plan: cpu("planned") },
    rpc_latency_ms: { no_plan: summarize(totals.plain.latencies), plan: summarize(totals.planned.latencies) },
    violations_recorded: rejected.rows[0].n,
    plan_refuses_a_bad_call: refused,
    check_only_us_per_call: checkMicros(200_000),
    concurrency,
    batch_size: batchSize,
    target_ratio: 0.8,
    met: checkTarget(
      "ingest with a 50-event tracking plan, ratio to no plan",
      Math.round((rate("planned") / rate("plain")) * 100) / 100,
      0.8,
    ).met,
  });
}
