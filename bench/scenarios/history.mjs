// @ts-check
import pg from "pg";
import { createSourceAndDestination, setEnabled } from "../lib/admin.mjs";
import { startCpuMeter } from "../lib/cpu.mjs";
import { queueDeliveries } from "../lib/queue.mjs";
import { startService } from "../lib/service.mjs";
import { report } from "../lib/stats.mjs";

/**
 * Whether claims and completions cost the same however much history there
 * is: a burn-down of `count` with no finished deliveries, then `history`
 * finished deliveries (each with an attempt row, over the last ten days,
 * the same destination) written in SQL, then the same burn-down again. It
 * reports the CPU per webhook of the service and of its Postgres backends
 * for both. The fill works on either job-table layout (the queue and
 * history tables, or the one `deliveries` table before them), so the same
 * file measures an older checkout for comparison.
 * @param {{ db: import("../lib/postgres.mjs").Database, sink: import("../lib/sink.mjs").Sink, count: number, history: number }} options
 */
export async function historyScenario({ db, sink, count, history }) {
  const empty = await burnDown(db, sink, count, "empty");
  const filled = await fillHistory(db, history);
  const full = await burnDown(db, sink, count, "full");
  const ratio = (/** @type {number | null} */ a, /** @type {number | null} */ b) =>
    a === null || b === null ? null : Math.round((b / a) * 100) / 100;
  report({
    scenario: "history",
    layout: filled.layout,
    deliveries: count,
    finished_in_history: filled.finished,
    fill_s: filled.seconds,
    history_mb: filled.mb,
    empty,
    full,
    postgres_cpu_ratio_full_to_empty: ratio(empty.cpu_us_per_webhook.postgres, full.cpu_us_per_webhook.postgres),
    service_cpu_ratio_full_to_empty: ratio(empty.cpu_us_per_webhook.service, full.cpu_us_per_webhook.service),
    target_ratio_max: 1.1,
  });
}

/**
 * A burn-down of `count` queued deliveries of a new destination, by a
 * service started for it: rate and CPU per webhook. Waits on the sink and
 * on the queue, never on a count of the history (which would be a scan of
 * millions of rows, measured with the rest).
 * @param {import("../lib/postgres.mjs").Database} db
 * @param {import("../lib/sink.mjs").Sink} sink
 * @param {number} count
 * @param {string} name
 */
export async function burnDown(db, sink, count, name) {
  const service = await startService(db.url, { WAYPOST_DESTINATION_CONCURRENCY: "64" });
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  try {
    const { source, destination } = await createSourceAndDestination(service.url, `${sink.url}/ok`, { name, enabled: false });
    await queueDeliveries(pool, { sourceId: source.id, destinationId: destination.id, count, prefix: `${name}${Date.now()}` });
    await pool.query("VACUUM ANALYZE");
    await sink.reset();
    const meter = await startCpuMeter(pool, { service: service.pid });
    const start = performance.now();
    await setEnabled(service.url, destination.id, true);
    const arrived = await sink.waitForCount(count);
    while ((await unfinished(pool, destination.id)) > 0) await new Promise((r) => setTimeout(r, 200));
    const { used, statements } = await meter.stop();
    return {
      webhooks_per_s: Math.round((count / (arrived - start)) * 1000),
      cpu_us_per_webhook: {
        service: used.service === null ? null : Math.round((used.service * 1e6) / count),
        postgres: used.postgres === null ? null : Math.round((used.postgres * 1e6) / count),
      },
      postgres_statements: statements,
    };
  } finally {
    await pool.end();
    await service.stop();
  }
}

/**
 * Deliveries of the destination not finished yet, over the claim's own
 * index in either layout.
 * @param {pg.Pool} pool
 * @param {string} destinationId
 */
async function unfinished(pool, destinationId) {
  const split = (await pool.query("SELECT to_regclass('delivery_queue') IS NOT NULL AS split")).rows[0].split;
  const sql = split
    ? "SELECT count(*)::int AS n FROM delivery_queue WHERE destination_id = $1"
    : "SELECT count(*)::int AS n FROM deliveries WHERE destination_id = $1 AND status IN ('pending', 'retrying')";
  return (await pool.query(sql, [destinationId])).rows[0].n;
}

/**
 * Writes `total` finished deliveries of one destination with their
 * messages and one attempt each, spread over the ten days before now, in
 * chunks of a million; none when the database already holds that many
 * (BENCH_HISTORY_DATABASE_URL names such a database, kept from a run).
 * @param {import("../lib/postgres.mjs").Database} db
 * @param {number} total
 */
async function fillHistory(db, total) {
  const pool = new pg.Pool({ connectionString: db.url, max: 1 });
  try {
    return await fill(pool, total);
  } finally {
    await pool.end();
  }
}

/**
 * @param {pg.Pool} pool
 * @param {number} total
 */
async function fill(pool, total) {
  const split = (await pool.query("SELECT to_regclass('delivery_history') IS NOT NULL AS split")).rows[0].split;
  const finished = async () =>
    Number((await pool.query(`SELECT count(*) AS n FROM ${split ? "delivery_history" : "deliveries"}`)).rows[0].n);
  const started = performance.now();
  const sourceId = (await pool.query("SELECT id FROM sources LIMIT 1")).rows[0].id;
  const destinationId = "00000000-0000-4000-8000-00000000f111";
  await pool.query(
    'INSERT INTO destinations (id, name, enabled, webhooks) VALUES ($1, \'old\', false, \'[{"url":"http://127.0.0.1/ok","headers":{}}]\') ON CONFLICT DO NOTHING',
    [destinationId],
  );
  if ((await finished()) >= total) total = 0;
  if (split) await pool.query("SELECT waypost_create_day_partitions((now() - interval '11 days')::date, now()::date)");
  const chunk = 1_000_000;
  for (let start = 0; start < total; start += chunk) {
    const n = Math.min(chunk, total - start);
    const values = [sourceId, destinationId, start, n, total];
    const messages = `INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
         SELECT $1, 'old-' || g, 'track', 'user-' || (g % 5000), now() - interval '10 days' * (1 - g::float8 / $5), '{}'
           FROM generate_series($3::int, $3::int + $4::int - 1) AS g
         RETURNING id, received_at`;
    if (split) {
      await pool.query(
        `WITH m AS (${messages}), h AS (
           INSERT INTO delivery_history (destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count,
                                         lease_token, first_attempt_at)
           SELECT $2, nextval('delivery_ids'), m.id, $1, 'delivered', m.received_at, m.received_at + interval '1 second', 1, 1,
                  m.received_at
             FROM m
           RETURNING id, finalized_at
         )
         INSERT INTO delivery_attempts (destination_id, delivery_id, attempt, url_index, url, attempted_at, outcome, status_code, latency_ms)
         SELECT $2, id, 1, 0, 'http://127.0.0.1/ok', finalized_at, 'success', 200, 3 FROM h`,
        values,
      );
    } else {
      await pool.query(
        `WITH m AS (${messages}), d AS (
           INSERT INTO deliveries (destination_id, message_pk, source_id, status, run_at, created_at, attempt_count,
                                   first_attempt_at, finalized_at, finished_xid)
           SELECT $2, m.id, $1, 'delivered', m.received_at, m.received_at, 1, m.received_at, m.received_at + interval '1 second',
                  pg_current_xact_id()
             FROM m
           RETURNING id, finalized_at
         )
         INSERT INTO delivery_attempts (destination_id, delivery_id, attempt, url_index, url, attempted_at, outcome, status_code, latency_ms)
         SELECT $2, id, 1, 0, 'http://127.0.0.1/ok', finalized_at, 'success', 200, 3 FROM d`,
        values,
      );
    }
  }
  await pool.query("VACUUM ANALYZE");
  const size = await pool.query(
    `SELECT sum(pg_total_relation_size(c.oid))::bigint AS b FROM pg_class c
      WHERE c.relkind IN ('r', 'p') AND c.relname ~ '^(deliveries|delivery_history|delivery_attempts)'`,
  );
  return {
    layout: split ? "queue_and_history" : "one_table",
    finished: await finished(),
    seconds: Math.round(performance.now() - started) / 1000,
    mb: Math.round(Number(size.rows[0].b) / 2 ** 20),
  };
}
