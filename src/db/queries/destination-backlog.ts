import type pg from "pg";
import { type Queryable, withTransaction } from "../pool.js";

/**
 * Unfinished deliveries (pending + retrying) of every destination, 0 for
 * those without any, so a gauge falls to 0 rather than vanishing. Each count
 * reads only the destination's part of the queue (which holds
 * nothing else), so its cost follows the backlog, not the history.
 */
export function selectDestinationBacklogs(pool: pg.Pool, timeoutMs: number): Promise<Map<string, number>> {
  return withinStatementTimeout(pool, timeoutMs, async (client) => {
    const result = await client.query<{ id: string; backlog: string }>(
      `SELECT d.id,
              (SELECT count(*) FROM delivery_queue j WHERE j.destination_id = d.id) AS backlog
         FROM destinations d`,
    );
    return new Map(result.rows.map((row) => [row.id, Number(row.backlog)]));
  });
}

/** `count` in a transaction of its own whose statements time out after `timeoutMs`: bounds a scrape when the backlog is huge or the database slow. */
export function withinStatementTimeout<T>(pool: pg.Pool, timeoutMs: number, count: (client: Queryable) => Promise<T>): Promise<T> {
  return withTransaction(pool, async (client) => {
    await client.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.round(timeoutMs))}`);
    return count(client);
  });
}
