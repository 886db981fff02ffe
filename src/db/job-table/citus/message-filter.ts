import type { Queryable } from "../../pool.js";
import { filterPredicates, type DeliveryFilter, type Params } from "../filter.js";

/**
 * A delivery filter's predicates on Citus. A filter by messageId or userId
 * reads the messages first (across their shards) and filters the
 * deliveries by those messages' ids: inside a statement over the
 * deliveries (the destination's shard, or a view over two tables), a
 * subquery on the messages cannot be planned.
 */
export async function citusFilterPredicates(db: Queryable, filter: DeliveryFilter, params: Params): Promise<string[]> {
  const where = filterPredicates({ ...filter, messageId: undefined, userId: undefined }, params);
  for (const [column, value] of [
    ["message_id", filter.messageId],
    ["user_id", filter.userId],
  ] as const) {
    if (value === undefined) continue;
    const messages = await db.query<{ id: string }>(
      `SELECT id FROM messages WHERE source_id IN (SELECT id FROM sources) AND ${column} = $1`,
      [value],
    );
    where.push(
      `d.message_pk = ANY (${params.add(
        messages.rows.map((row) => row.id),
        "bigint[]",
      )})`,
    );
  }
  return where;
}
