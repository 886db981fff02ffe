// @ts-check
import pg from "pg";
import { rpc, setEnabled } from "../lib/admin.mjs";
import { startCpuMeter } from "../lib/cpu.mjs";
import { queueDeliveries } from "../lib/queue.mjs";
import { startService } from "../lib/service.mjs";
import { report } from "../lib/stats.mjs";
import { waitForStatus } from "./burn-down.mjs";
import { checkTarget } from "../lib/targets.mjs";

/** A small transform (docs/routing.md#transforms): rename the event, add a property. */
export const smallTransform = `function transform(event) {
  event.event = "Renamed " + event.event;
  event.properties = { ...event.properties, added: true };
  return event;
}`;

/** The windows, A B B A: a drift over the run weighs on both kinds alike. */
const order = /** @type {const} */ (["no_transform", "transform", "transform", "no_transform"]);

/**
 * A transform's cost at send time: burn-downs of `count` queued deliveries
 * (queued in SQL, the destination created disabled, then enabled), in one
 * `all` service process, alternating a destination without rules and one
 * with a small transform (each window a fresh destination), A B B A, after
 * an unmeasured warm-up of each kind. Reports webhooks/s of each and their
 * ratio (target ≥ 0.6), service and Postgres CPU per webhook of each, the
 * service CPU the transform adds per webhook, and the time per call inside
 * the sandbox from the service's `waypost_transform_duration_seconds`.
 * Checks that the transform ran: TestDestination before, then the bodies
 * sent (ListDeliveries, and every attempt's `sent_body` in SQL) after.
 * @param {{ db: import("../lib/postgres.mjs").Database, sink: import("../lib/sink.mjs").Sink, count: number, concurrency?: number, warmUp?: number }} options
 */
export async function transformBurnDownScenario({ db, sink, count, concurrency = 64, warmUp = Math.min(count, 2_000) }) {
  const service = await startService(db.url, {
    WAYPOST_DESTINATION_CONCURRENCY: String(concurrency),
    // On a machine shared with other work a small transform has taken over the default 50 ms and
    // failed its delivery for good, so the window never saw every call: the bench measures cost, not the limit.
    WAYPOST_TRANSFORM_TIMEOUT_MS: "2000",
  });
  const pool = new pg.Pool({ connectionString: db.url, max: 4 });
  try {
    const { source } = await rpc(service.url, "SourceService/CreateSource", { source: { name: "transform-burn-down" } });
    /** @param {"no_transform" | "transform"} kind @param {string} name */
    const createDestination = async (kind, name) =>
      /** @type {{ id: string }} */ (
        (
          await rpc(service.url, "DestinationService/CreateDestination", {
            destination: {
              name,
              sourceIds: [source.id],
              enabled: false,
              webhooks: [{ url: `${sink.url}/ok` }],
              sharedSecret: "bench-secret",
              ...(kind === "transform" ? { transform: smallTransform } : {}),
            },
          })
        ).destination
      );
    /**
     * One burn-down of `n` deliveries to a fresh destination of this kind.
     * @param {"no_transform" | "transform"} kind
     * @param {string} name
     * @param {number} n
     */
    const window = async (kind, name, n) => {
      const destination = await createDestination(kind, name);
      await queueDeliveries(pool, { sourceId: source.id, destinationId: destination.id, count: n, prefix: name });
      if (kind === "transform") await checkTransformDraft(service.url, destination.id);
      await pool.query("VACUUM ANALYZE delivery_queue");
      await sink.reset();
      const before = await transformHistogram(service.url);
      const meter = await startCpuMeter(pool, { service: service.pid });
      const start = performance.now();
      await setEnabled(service.url, destination.id, true);
      const arrived = await sink.waitForCount(n);
      await waitForStatus(pool, destination.id, n);
      const { used } = await meter.stop();
      const after = await transformHistogram(service.url);
      return {
        destinationId: destination.id,
        webhooksPerS: Math.round((n / (arrived - start)) * 1000),
        service: used.service,
        postgres: used.postgres,
        sandbox: subtractHistogram(after, before),
      };
    };

    await window("no_transform", "warm-up-a", warmUp);
    await window("transform", "warm-up-b", warmUp);
    /** @type {Array<{ kind: "no_transform" | "transform", destinationId: string, webhooksPerS: number, service: number | null, postgres: number | null, sandbox: Histogram }>} */
    const windows = [];
    for (const [i, kind] of order.entries()) windows.push({ kind, ...(await window(kind, `${kind}-${i}`, count)) });
    const rss = service.peakRssMb();

    const checked = await checkSentBodies(
      service.url,
      pool,
      windows.filter((w) => w.kind === "transform").map((w) => w.destinationId),
      windows.filter((w) => w.kind === "no_transform").map((w) => w.destinationId),
      count,
    );

    const of = (/** @type {"no_transform" | "transform"} */ kind) => windows.filter((w) => w.kind === kind);
    const mean = (/** @type {number[]} */ xs) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length);
    const cpuPerWebhook = (/** @type {"no_transform" | "transform"} */ kind, /** @type {"service" | "postgres"} */ process) => {
      let seconds = 0;
      for (const w of of(kind)) {
        const used = w[process];
        if (used === null) return null;
        seconds += used;
      }
      return Math.round((seconds * 1e6) / (count * of(kind).length));
    };
    const plain = mean(of("no_transform").map((w) => w.webhooksPerS));
    const transformed = mean(of("transform").map((w) => w.webhooksPerS));
    const serviceA = cpuPerWebhook("no_transform", "service");
    const serviceB = cpuPerWebhook("transform", "service");
    const sandbox = of("transform")
      .map((w) => w.sandbox)
      .reduce((a, b) => addHistogram(a, b));
    report({
      scenario: "transform-burn-down",
      deliveries_per_window: count,
      order,
      concurrency,
      webhooks_per_s: { no_transform: plain, transform: transformed },
      windows: { no_transform: of("no_transform").map((w) => w.webhooksPerS), transform: of("transform").map((w) => w.webhooksPerS) },
      ratio_transform_to_no_transform: Math.round((transformed / plain) * 100) / 100,
      target_ratio: 0.6,
      met: checkTarget("transform burn-down, ratio to no transform", Math.round((transformed / plain) * 100) / 100, 0.6).met,
      cpu_us_per_webhook: {
        no_transform: { service: serviceA, postgres: cpuPerWebhook("no_transform", "postgres") },
        transform: { service: serviceB, postgres: cpuPerWebhook("transform", "postgres") },
      },
      service_cpu_us_added_per_webhook: serviceA === null || serviceB === null ? null : serviceB - serviceA,
      sandbox_per_call: summarizeHistogram(sandbox),
      transform_checked: checked,
      server_peak_rss_mb: rss,
    });
    return { rss };
  } finally {
    await pool.end();
    await service.stop();
  }
}

/**
 * The destination's transform over one of its queued calls, through
 * TestDestination (nothing sent): fails fast, before a burn-down that would
 * otherwise wait for webhooks a broken transform never sends.
 * @param {string} baseUrl
 * @param {string} destinationId
 */
async function checkTransformDraft(baseUrl, destinationId) {
  const { calls } = await rpc(baseUrl, "DestinationService/TestDestination", { destination: { id: destinationId }, sampleSize: 1 });
  const body = calls?.[0]?.outcome === "TEST_OUTCOME_SEND" ? JSON.parse(calls[0].body) : undefined;
  if (!isTransformed(body)) throw new Error(`transform-burn-down: TestDestination answered ${JSON.stringify(calls)}`);
}

/**
 * Whether a body is what the small transform makes of a bench call.
 * @param {any} body
 */
function isTransformed(body) {
  return body?.event === "Renamed Order Completed" && body?.properties?.added === true && body?.properties?.orderId !== undefined;
}

/**
 * What the sink was sent, after the windows: the newest deliveries of each
 * transform destination through ListDeliveries (their `body` is what the
 * last attempt sent), and every attempt in SQL: the transform
 * destinations' attempts all sent a renamed body, the others' the stored
 * body (`sent_body` NULL).
 * @param {string} baseUrl
 * @param {pg.Pool} pool
 * @param {string[]} transformed
 * @param {string[]} plain
 * @param {number} count per destination
 */
async function checkSentBodies(baseUrl, pool, transformed, plain, count) {
  let viaRpc = 0;
  for (const destinationId of transformed) {
    const { deliveries } = await rpc(baseUrl, "DeliveryService/ListDeliveries", { destinationId, pageSize: 3 });
    for (const delivery of deliveries ?? []) {
      if (delivery.status !== "DELIVERY_STATUS_DELIVERED" || !isTransformed(JSON.parse(delivery.body)))
        throw new Error(`transform-burn-down: delivery ${delivery.id} sent ${delivery.body}`);
      viaRpc++;
    }
  }
  const { rows } = await pool.query(
    `SELECT destination_id = ANY ($1::uuid[]) AS transformed, count(*)::int AS attempts,
            count(*) FILTER (WHERE sent_body LIKE '%"event":"Renamed Order Completed"%' AND sent_body LIKE '%"added":true%')::int AS renamed,
            count(*) FILTER (WHERE sent_body IS NULL)::int AS stored_body
       FROM delivery_attempts WHERE destination_id = ANY ($2::uuid[]) AND outcome = 'success'
      GROUP BY 1`,
    [transformed, [...transformed, ...plain]],
  );
  const of = (/** @type {boolean} */ kind) => rows.find((r) => r.transformed === kind) ?? { attempts: 0, renamed: 0, stored_body: 0 };
  const checked = {
    bodies_checked_via_rpc: viaRpc,
    transform_attempts_renamed: of(true).renamed,
    transform_attempts: of(true).attempts,
    no_transform_attempts_with_stored_body: of(false).stored_body,
    no_transform_attempts: of(false).attempts,
  };
  const expected = count * transformed.length;
  if (
    viaRpc === 0 ||
    checked.transform_attempts !== expected ||
    checked.transform_attempts_renamed !== expected ||
    checked.no_transform_attempts_with_stored_body !== count * plain.length
  )
    throw new Error(`transform-burn-down: the bodies sent were not as expected: ${JSON.stringify(checked)}`);
  return checked;
}

/** @typedef {{ sum: number, count: number, buckets: Array<[number, number]> }} Histogram */

/**
 * waypost_transform_duration_seconds from the service's /metrics: sum,
 * count and cumulative buckets (upper bound in seconds, count).
 * @param {string} baseUrl
 * @returns {Promise<Histogram>}
 */
async function transformHistogram(baseUrl) {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const value = (/** @type {string} */ name) => Number(new RegExp(`^${name}(?:\\{\\})? (\\S+)$`, "m").exec(text)?.[1] ?? 0);
  /** @type {Array<[number, number]>} */
  const buckets = [...text.matchAll(/^waypost_transform_duration_seconds_bucket\{le="([^"]+)"\} (\S+)$/gm)].map((m) => [
    m[1] === "+Inf" ? Number.POSITIVE_INFINITY : Number(m[1]),
    Number(m[2]),
  ]);
  return { sum: value("waypost_transform_duration_seconds_sum"), count: value("waypost_transform_duration_seconds_count"), buckets };
}

/** @param {Histogram} a @param {Histogram} b a − b */
function subtractHistogram(a, b) {
  return {
    sum: a.sum - b.sum,
    count: a.count - b.count,
    buckets: a.buckets.map(([le, n]) => /** @type {[number, number]} */ ([le, n - (b.buckets.find(([l]) => l === le)?.[1] ?? 0)])),
  };
}

/** @param {Histogram} a @param {Histogram} b a + b */
function addHistogram(a, b) {
  return {
    sum: a.sum + b.sum,
    count: a.count + b.count,
    buckets: a.buckets.map(([le, n]) => /** @type {[number, number]} */ ([le, n + (b.buckets.find(([l]) => l === le)?.[1] ?? 0)])),
  };
}

/**
 * Mean time per call in µs, and the bucket bounds (in ms) the median and
 * the 99th percentile fall under.
 * @param {Histogram} h
 */
function summarizeHistogram(h) {
  if (h.count === 0) return null;
  const under = (/** @type {number} */ p) => {
    const bucket = h.buckets.find(([, n]) => n >= h.count * p);
    return bucket === undefined || bucket[0] === Number.POSITIVE_INFINITY ? null : bucket[0] * 1000;
  };
  return {
    calls: h.count,
    mean_us: Math.round((h.sum / h.count) * 1e6),
    p50_at_most_ms: under(0.5),
    p99_at_most_ms: under(0.99),
    source: "waypost_transform_duration_seconds",
  };
}
