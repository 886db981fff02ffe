// @ts-check

/**
 * What Postgres spent per statement over a measured window, from
 * `pg_stat_statements`, when the server has it loaded
 * (`shared_preload_libraries = 'pg_stat_statements'`); otherwise nothing is
 * reported and the bench runs as before. Each window resets this database's
 * entries, so the figures are the window's alone. Time is the statements'
 * execution time (planning excluded: Waypost's hot statements are prepared).
 */

/**
 * Starts a window: resets this database's statement counters. Resolves to
 * undefined when pg_stat_statements is not loaded on the server.
 * @param {import("pg").Pool} pool
 * @returns {Promise<{ stop(): Promise<StatementFigure[]> } | undefined>}
 */
export async function startStatementWindow(pool) {
  try {
    await pool.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    await pool.query("SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0)");
  } catch {
    return undefined;
  }
  return { stop: () => topStatements(pool) };
}

/**
 * @typedef {{ statement: string, calls: number, rows: number, total_ms: number, us_per_call: number, us_per_row: number | null,
 *             blocks_hit: number, blocks_read: number, blocks_dirtied: number, wal_kb: number }} StatementFigure
 */

/**
 * The window's statements of this database, costliest first (at most `limit`).
 * @param {import("pg").Pool} pool
 * @param {number} [limit]
 * @returns {Promise<StatementFigure[]>}
 */
async function topStatements(pool, limit = 8) {
  const { rows } = await pool.query(
    `SELECT regexp_replace(query, '\\s+', ' ', 'g') AS query, calls::bigint AS calls, rows::bigint AS rows,
            total_exec_time AS total_ms, shared_blks_hit::bigint AS hit, shared_blks_read::bigint AS read,
            shared_blks_dirtied::bigint AS dirtied, wal_bytes::bigint AS wal
       FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND query NOT ILIKE '%pg_stat_statements%'
      ORDER BY total_exec_time DESC LIMIT $1`,
    [limit],
  );
  return rows.map((/** @type {Record<string, string | number>} */ r) => {
    const calls = Number(r.calls);
    const rowCount = Number(r.rows);
    const totalMs = Number(r.total_ms);
    return {
      statement: String(r.query).slice(0, 160),
      calls,
      rows: rowCount,
      total_ms: Math.round(totalMs),
      us_per_call: Math.round((totalMs * 1000) / Math.max(1, calls)),
      us_per_row: rowCount > 0 ? Math.round((totalMs * 1000 * 10) / rowCount) / 10 : null,
      blocks_hit: Number(r.hit),
      blocks_read: Number(r.read),
      blocks_dirtied: Number(r.dirtied),
      wal_kb: Math.round(Number(r.wal) / 1024),
    };
  });
}
