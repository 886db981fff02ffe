// @ts-check
import pg from "pg";
import { rpc } from "../lib/admin.mjs";
import { checkpoint, startCpuMeter } from "../lib/cpu.mjs";
import { startService } from "../lib/service.mjs";
import { report, sleep, summarize } from "../lib/stats.mjs";

/**
 * BackfillDestination over `count` retained calls: the calls (track calls
 * of 50,000 users, received over the last 3 days) are written straight into
 * `messages` for a source the service knows, then a new destination of it
 * (posting to the sink) is backfilled over the last 4 days, in one `all`
 * process, so the backfilled deliveries are sent while the backfill goes
 * on, as they would be for a user. Meanwhile `rate` single Track RPCs a
 * second (open loop: sent on schedule, not after the previous answer) go
 * to another source with a destination of its own (so the backfilled
 * destination's deliveries are the backfill's alone): the latency of those
 * sent in the 3 s before the backfill (after 3 s to settle) and of those
 * sent during it. The backfill has ended when the destination has as many
 * deliveries, queued or finished, as
 * BackfillDestination's backfill.candidates (polled in SQL by destination_id,
 * at most every 500 ms, less often while far from it). A second
 * BackfillDestination at the end must find nothing to create.
 * @param {{ db: import("../lib/postgres.mjs").Database, sink: import("../lib/sink.mjs").Sink, count: number, rate?: number }} options
 */
export async function backfillScenario({ db, sink, count, rate = 200 }) {
  const service = await startService(db.url);
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  try {
    const { source } = await rpc(service.url, "SourceService/CreateSource", { source: { name: "backfilled" } });
    const { source: live } = await rpc(service.url, "SourceService/CreateSource", { source: { name: "live" } });
    const destination = await createDestination(service.url, "backfill", source.id, `${sink.url}/ok`);
    await createDestination(service.url, "live", live.id, `${sink.url}/ok`);
    const filled = await fillMessages(pool, source.id, count);

    // A client's connection and the ingest path warm (one at a time), then the steady rate: its first
    // 3 s are left out (latencies settle over 2 s or so), the next 3 s are the latency without a backfill.
    for (let i = 0; i < 200; i++) {
      const outcome = await trackOnce(service.url, live.writeKey, `warm-${i}`, i);
      if (outcome !== "ok") throw new Error(`backfill: a Track RPC failed: ${outcome}`);
    }
    const tracker = startTracking(service.url, live.writeKey, rate);
    await sleep(3_000);
    const beforeFrom = performance.now();
    await sleep(3_000);
    await sink.reset();
    const meter = await startCpuMeter(pool, { service: service.pid });
    const start = performance.now();
    const answer = await rpc(service.url, "DestinationService/BackfillDestination", {
      destinationId: destination.id,
      since: new Date(Date.now() - 4 * 24 * 3600_000).toISOString(),
    });
    const answeredMs = performance.now() - start;
    const candidates = Number(answer.backfill?.candidates ?? 0);
    const { polls, delivered } = await waitForDeliveries(pool, destination.id, candidates, start);
    const ended = performance.now();
    const webhooks = await sink.count();
    const { used, seconds, statements } = await meter.stop();
    // Every call sent during the backfill counts, the slowest (still unanswered when it ended) too.
    await tracker.stop();
    const before = tracker.sentBetween(beforeFrom, start);
    const during = tracker.sentBetween(start, ended);
    const again = await rpc(service.url, "DestinationService/BackfillDestination", {
      destinationId: destination.id,
      since: new Date(Date.now() - 4 * 24 * 3600_000).toISOString(),
    });
    const backfillS = (ended - start) / 1000;
    const percent = (/** @type {number | null} */ s) => (s === null ? null : Math.round((s / seconds) * 100));
    report({
      scenario: "backfill",
      calls_retained: count,
      fill_s: filled.seconds,
      messages_mb: filled.mb,
      candidate_count: candidates,
      backfill_rpc_answered_ms: Math.round(answeredMs),
      backfill_s: Math.round(backfillS * 10) / 10,
      deliveries_created_per_s: Math.round(candidates / backfillS),
      polls,
      tracking: {
        rate_per_s: rate,
        before_backfill_ms: before,
        during_backfill_ms: during,
        target_p99_ms: 100,
      },
      webhooks_during_backfill: { sink: webhooks, backfilled_delivered: delivered },
      cpu_percent_of_core_during_backfill: { service: percent(used.service), postgres: percent(used.postgres) },
      second_backfill_candidate_count: Number(again.backfill?.candidates ?? 0),
      postgres_statements: statements,
      server_peak_rss_mb: service.peakRssMb(),
    });
  } finally {
    await pool.end();
    await service.stop();
  }
}

/**
 * @param {string} baseUrl
 * @param {string} name
 * @param {string} sourceId
 * @param {string} url
 * @returns {Promise<{ id: string }>}
 */
async function createDestination(baseUrl, name, sourceId, url) {
  const { destination } = await rpc(baseUrl, "DestinationService/CreateDestination", {
    destination: { name, sourceIds: [sourceId], enabled: true, webhooks: [{ url }], sharedSecret: "bench-secret" },
  });
  return destination;
}

/**
 * Writes `total` track calls of the source into `messages` in SQL, in
 * chunks, with bodies as Waypost stores them, received over the last 3
 * days (oldest first, as they would have arrived); then VACUUM ANALYZE
 * (autovacuum may be off on the bench's server).
 * @param {pg.Pool} pool
 * @param {string} sourceId
 * @param {number} total
 */
async function fillMessages(pool, sourceId, total) {
  const started = performance.now();
  const chunk = 250_000;
  for (let start = 0; start < total; start += chunk) {
    await pool.query(
      `INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
       SELECT $1, id, 'track', 'user-' || (g % 50000), at,
              '{"version":1,"type":"track","userId":"user-' || (g % 50000) || '","event":"' ||
              (ARRAY['Order Completed','Product Viewed','Signed Up','Cart Updated'])[g % 4 + 1] ||
              '","properties":{"orderId":"' || g || '","total":' || (g % 500) || '.5,"currency":"EUR","coupon":null},' ||
              '"context":{"ip":"203.0.113.9","library":{"name":"analytics-node","version":"3.1.0"}},"timestamp":"' ||
              to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '","messageId":"' || id || '"}'
         FROM (SELECT g, 'bf-' || g AS id, now() - interval '3 days' * (1 - g::float8 / $4) AS at
                 FROM generate_series($2::int, $2::int + $3::int - 1) AS g) AS calls`,
      [sourceId, start, Math.min(chunk, total - start), total],
    );
  }
  await pool.query("VACUUM ANALYZE messages");
  // The fill's writes flushed now, not in the windows measured after it.
  await checkpoint(pool);
  const size = await pool.query("SELECT pg_total_relation_size('messages')::bigint AS b");
  return { seconds: Math.round(performance.now() - started) / 1000, mb: Math.round(Number(size.rows[0].b) / 2 ** 20) };
}

/**
 * Polls until the destination has `target` deliveries, queued or finished:
 * one statement (one snapshot, so a delivery moving from the queue to the
 * history is counted once) over each table's destination_id index, every
 * 500 ms near the end and less often before (half the time left at the
 * rate so far, at most 5 s), so that counting a million rows does not
 * weigh on what is measured.
 * @param {pg.Pool} pool
 * @param {string} destinationId
 * @param {number} target
 * @param {number} start performance.now() when the backfill was asked for
 */
async function waitForDeliveries(pool, destinationId, target, start, timeoutMs = 1_800_000) {
  let polls = 0;
  for (;;) {
    const { rows } = await pool.query(
      `SELECT (SELECT count(*) FROM delivery_queue WHERE destination_id = $1)::int AS queued,
              (SELECT count(*) FROM delivery_history WHERE destination_id = $1)::int AS finished`,
      [destinationId],
    );
    polls++;
    const created = rows[0].queued + rows[0].finished;
    if (created >= target) return { polls, delivered: /** @type {number} */ (rows[0].finished) };
    const elapsed = performance.now() - start;
    if (elapsed > timeoutMs) throw new Error(`backfill: ${created} of ${target} deliveries after ${Math.round(elapsed / 1000)} s`);
    const left = created > 0 ? ((target - created) * elapsed) / created : 5_000;
    await sleep(Math.min(5_000, Math.max(500, left / 2)));
  }
}

/**
 * One Track RPC in Connect JSON: "ok", or why not (the HTTP status with
 * the Connect error code, or the network error's name).
 * @param {string} baseUrl
 * @param {string} writeKey
 * @param {string} messageId
 * @param {number} n
 * @returns {Promise<string>}
 */
async function trackOnce(baseUrl, writeKey, messageId, n) {
  try {
    const response = await fetch(`${baseUrl}/waypost.v1.TrackingService/Track`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${writeKey}` },
      body: JSON.stringify({
        track: {
          messageId,
          userId: `user-${n % 5000}`,
          event: "Order Completed",
          properties: { orderId: String(n), total: 42.5, currency: "EUR" },
          context: { ip: "203.0.113.9" },
        },
      }),
    });
    const text = await response.text();
    if (response.ok) return "ok";
    let code = "";
    try {
      code = JSON.parse(text).code ?? "";
    } catch {}
    return `${response.status} ${code}`.trim();
  } catch (error) {
    return error instanceof Error ? (error.cause instanceof Error ? error.cause.name : error.name) : "error";
  }
}

/** Calls not answered yet past which the tracker stops sending (and counts what it did not send). */
const maxInFlight = 1_000;

/**
 * Single Track RPCs (Connect JSON over HTTP/1.1 keep-alive, as a server
 * SDK without batching would send them) at `rate` a second, on schedule
 * whatever the answers take (open loop), up to `maxInFlight` unanswered.
 * @param {string} baseUrl
 * @param {string} writeKey
 * @param {number} rate
 */
function startTracking(baseUrl, writeKey, rate) {
  /** @type {Array<{ at: number, ms: number, outcome: string }>} */
  const calls = [];
  /** @type {number[]} when each call not sent was due */
  const notSent = [];
  let due = 0;
  const inFlight = new Set();
  const startedAt = performance.now();
  const trackOne = async (/** @type {number} */ n) => {
    const at = performance.now();
    const outcome = await trackOnce(baseUrl, writeKey, `live-${n}`, n);
    calls.push({ at, ms: performance.now() - at, outcome });
  };
  const timer = setInterval(() => {
    const now = Math.floor(((performance.now() - startedAt) * rate) / 1000);
    for (; due < now; due++) {
      if (inFlight.size >= maxInFlight) {
        notSent.push(performance.now());
        continue;
      }
      const call = trackOne(due);
      inFlight.add(call);
      call.finally(() => inFlight.delete(call));
    }
  }, 10);
  return {
    /** Stops sending; resolves when every call sent has been answered. */
    async stop() {
      clearInterval(timer);
      await Promise.all([...inFlight]);
    },
    /**
     * The calls sent in [from, to) (performance.now()): how many were
     * answered, latency p50/p99/max in ms of those accepted, failures by
     * reason, and how many were due but not sent (too many unanswered).
     * @param {number} from
     * @param {number} to
     */
    sentBetween(from, to) {
      const sent = calls.filter((c) => c.at >= from && c.at < to);
      /** @type {Record<string, number>} */
      const failed = {};
      for (const c of sent) if (c.outcome !== "ok") failed[c.outcome] = (failed[c.outcome] ?? 0) + 1;
      return {
        sent: sent.length,
        ...summarize(sent.filter((c) => c.outcome === "ok").map((c) => c.ms)),
        failed,
        not_sent: notSent.filter((at) => at >= from && at < to).length,
      };
    },
  };
}
