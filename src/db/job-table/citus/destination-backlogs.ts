import type pg from "pg";
import { withinStatementTimeout } from "../../queries/destination-backlog.js";

/**
 * selectDestinationBacklogs on Citus, where a correlated subquery over a
 * distributed table cannot run per row of a reference table: the queue
 * counted by destination on every shard (each in parallel), then every
 * destination given its count or 0.
 */
export function selectDestinationBacklogsOnCitus(pool: pg.Pool, timeoutMs: number): Promise<Map<string, number>> {
  return withinStatementTimeout(pool, timeoutMs, async (client) => {
    const [destinations, counts] = await Promise.all([
      client.query<{ id: string }>("SELECT id FROM destinations"),
      client.query<{ destination_id: string; backlog: string }>(
        "SELECT destination_id, count(*) AS backlog FROM delivery_queue GROUP BY destination_id",
      ),
    ]);
    const byId = new Map(counts.rows.map((row) => [row.destination_id, Number(row.backlog)]));
    return new Map(destinations.rows.map((row) => [row.id, byId.get(row.id) ?? 0]));
  });
}
