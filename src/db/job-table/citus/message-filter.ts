import type { Queryable } from "../../pool.js";
import { and, filterPredicates, Params, type DeliveryFilter } from "../filter.js";

/**
 * A delivery filter's predicates on Citus. A filter by messageId or userId
 * reads the messages first (across their shards, every source's) and
 * filters the deliveries by those messages' ids: inside a statement over
 * the deliveries (the destination's shard, or a view over two tables), a
 * subquery on the messages cannot be planned.
 */
export async function citusFilterPredicates(db: Queryable, filter: DeliveryFilter, params: Params): Promise<string[]> {
  const where = filterPredicates({ ...filter, messageId: undefined, userId: undefined }, params);
  if (filter.messageId === undefined && filter.userId === undefined) return where;
  const found = new Params();
  const messages = ["m.source_id IN (SELECT id FROM sources)"];
  if (filter.messageId !== undefined) messages.push(`m.message_id = ${found.add(filter.messageId, "text")}`);
  if (filter.userId !== undefined) messages.push(`m.user_id = ${found.add(filter.userId, "text")}`);
  const result = await db.query<{ id: string }>(`SELECT m.id FROM messages m WHERE ${and(messages)}`, found.values);
  where.push(
    `d.message_pk = ANY (${params.add(
      result.rows.map((row) => row.id),
      "bigint[]",
    )})`,
  );
  return where;
}
