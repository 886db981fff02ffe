import type pg from "pg";
import { type Queryable, withTransaction } from "../pool.js";
import type { JobTableLayout } from "../citus/layout.js";

/**
 * Unfinished deliveries (pending + retrying) of every destination, 0 for
 * those without any, so a gauge falls to 0 rather than vanishing. Each count
 * reads only the destination's part of the queue (which holds
 * nothing else), so its cost follows the backlog, not the history. The statement
 * timeout bounds a scrape when the backlog is huge or the database slow.
 */
export async function selectDestinationBacklogs(
  pool: pg.Pool,
  timeoutMs: number,
  layout: JobTableLayout = "postgres",
): Promise<Map<string, number>> {
  return withTransaction(pool, async (client) => {
    await client.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.round(timeoutMs))}`);
    if (layout === "citus") return backlogsOnCitus(client);
    const result = await client.query<{ id: string; backlog: string }>(
      `SELECT d.id,
              (SELECT count(*) FROM delivery_queue j WHERE j.destination_id = d.id) AS backlog
         FROM destinations d`,
    );
    return new Map(result.rows.map((row) => [row.id, Number(row.backlog)]));
  });
}

/**
 * On Citus, where a correlated subquery over a distributed table cannot
 * run per row of a reference table: the queue counted by destination on
 * every shard (each in parallel), then every destination given its count
 * or 0.
 */
async function backlogsOnCitus(client: Queryable): Promise<Map<string, number>> {
  const [destinations, counts] = await Promise.all([
    client.query<{ id: string }>("SELECT id FROM destinations"),
    client.query<{ destination_id: string; backlog: string }>(
      "SELECT destination_id, count(*) AS backlog FROM delivery_queue GROUP BY destination_id",
    ),
  ]);
  const byId = new Map(counts.rows.map((row) => [row.destination_id, Number(row.backlog)]));
  return new Map(destinations.rows.map((row) => [row.id, byId.get(row.id) ?? 0]));
}
