// @ts-check
import pg from "pg";
import { report } from "../lib/stats.mjs";

/**
 * Retention by day: `count` finished deliveries (with an attempt row each)
 * finished on one day past retention, then that day dropped as maintenance
 * drops it (the day's history and attempts partitions: DROP TABLE, no
 * DELETE). Reports the time of the drop and the tables' sizes before and
 * after, and the dead rows left behind (none: nothing for vacuum to do).
 * @param {{ db: import("../lib/postgres.mjs").Database, count: number }} options
 */
export async function retentionScenario({ db, count }) {
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  try {
    // The schema, without a service: the migrations are what the service runs at start.
    const { runMigrations } = await import("../../dist/src/db/migrate.js");
    await runMigrations(pool);
    const day = new Date(Date.now() - 40 * 86_400_000).toISOString().slice(0, 10);
    await pool.query("SELECT waypost_create_day_partitions($1::date, $1::date)", [day]);
    const started = performance.now();
    const chunk = 1_000_000;
    for (let start = 0; start < count; start += chunk) {
      const n = Math.min(chunk, count - start);
      await pool.query(
        `WITH h AS (
           INSERT INTO delivery_history (destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count,
                                         lease_token, first_attempt_at)
           SELECT ('00000000-0000-4000-8000-0000000000d' || (g % 10))::uuid, nextval('delivery_ids'), g, '00000000-0000-4000-8000-0000000000a1',
                  'delivered', t, t + interval '1 second', 1, 1, t
             FROM generate_series($2::int, $2::int + $3::int - 1) AS g,
                  LATERAL (SELECT $1::date + make_interval(secs => g::float8 * 86000 / $4) AS t) x
           RETURNING destination_id, id, finalized_at
         )
         INSERT INTO delivery_attempts (destination_id, delivery_id, attempt, url_index, url, attempted_at, outcome, status_code, latency_ms)
         SELECT destination_id, id, 1, 0, 'http://127.0.0.1/ok', finalized_at, 'success', 200, 3 FROM h`,
        [day, start, n, count],
      );
    }
    const fillSeconds = Math.round(performance.now() - started) / 1000;
    await pool.query("VACUUM ANALYZE delivery_history, delivery_attempts");
    const before = await sizes(pool);
    const { dropDaysBefore } = await import("../../dist/src/db/job-table/days.js");
    // The whole drop (the files freed) is timed here; how long the parents were locked (the
    // detach) a second connection watches, polling pg_locks every 10 ms.
    const lockWatch = watchParentLocks(db.url);
    const dropStart = performance.now();
    const dropped = await dropDaysBefore(pool, new Date(Date.now() - 30 * 86_400_000));
    const dropMs = Math.round(performance.now() - dropStart);
    const parentLockedMs = await lockWatch.stop();
    await pool.query("SELECT pg_stat_force_next_flush()").catch(() => undefined);
    const after = await sizes(pool);
    report({
      scenario: "retention",
      finished_deliveries: count,
      fill_s: fillSeconds,
      dropped: dropped.map((/** @type {{ table: string, day: string }} */ d) => `${d.table}_${d.day}`),
      drop_ms: dropMs,
      parent_locked_ms_seen: parentLockedMs,
      mb_before: before,
      mb_after: after,
      target_drop_ms_max: 1_000,
    });
  } finally {
    await pool.end();
  }
}

/**
 * Sizes in MB (tables with their indexes) and dead rows of the job tables.
 * @param {pg.Pool} pool
 */
async function sizes(pool) {
  const { rows } = await pool.query(
    `SELECT p.relname AS parent, sum(pg_total_relation_size(c.oid))::bigint AS b
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
      WHERE p.relname IN ('delivery_history', 'delivery_attempts')
      GROUP BY p.relname ORDER BY 1`,
  );
  return Object.fromEntries(rows.map((/** @type {{ parent: string, b: string }} */ r) => [r.parent, Math.round(Number(r.b) / 2 ** 20)]));
}

/**
 * Polls (every 10 ms) whether anything holds an AccessExclusive lock on the
 * history's or the attempts' parent table, and reports the longest run of
 * polls that saw one (0: none seen): about how long completions (inserts
 * into the history) and attempt rows waited.
 * @param {string} url
 */
function watchParentLocks(url) {
  const client = new pg.Client({ connectionString: url });
  let stopped = false;
  let longest = 0;
  const watching = (async () => {
    await client.connect();
    /** @type {number | undefined} */
    let since;
    while (!stopped) {
      const { rows } = await client.query(
        `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
          WHERE c.relname IN ('delivery_history', 'delivery_attempts') AND l.mode = 'AccessExclusiveLock' AND l.granted`,
      );
      const now = performance.now();
      if (rows[0].n > 0) since ??= now;
      else if (since !== undefined) {
        longest = Math.max(longest, now - since);
        since = undefined;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    if (since !== undefined) longest = Math.max(longest, performance.now() - since);
    await client.end();
  })();
  return {
    async stop() {
      stopped = true;
      await watching;
      return Math.round(longest);
    },
  };
}
