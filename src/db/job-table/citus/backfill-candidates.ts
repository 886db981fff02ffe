import type { Queryable } from "../../pool.js";
import type { BackfillRange } from "../../queries/backfill-candidates.js";

// The range's calls of the destination's sources (delete notifications
// left out), across the messages' shards, in acceptance order.
const rangeCalls = (withPayload: boolean) => `SELECT m.id, ${withPayload ? "m.payload" : "NULL AS payload"}, m.received_at FROM messages m
  WHERE m.source_id IN (SELECT ds.source_id FROM destination_sources ds WHERE ds.destination_id = $1)
    AND m.received_at >= $2 AND m.received_at < $3 AND m.type <> 'delete' AND m.id > $4
  ORDER BY m.id LIMIT $5`;

/** How many calls to read at once when counting. */
const countChunk = 10_000;

/**
 * The next page of the range's calls without a finished delivery to the
 * destination, as selectBackfillCandidates on one Postgres. On Citus the
 * messages and the deliveries are on different shards, so the anti-join is
 * two statements: the range's calls (across the messages' shards), then
 * those of them the destination's history has (its shard). Calls dropped by
 * the second are replaced by reading on, so a short page still means the
 * range is done.
 */
export async function selectBackfillCandidatesOnCitus(
  db: Queryable,
  range: BackfillRange,
  afterPk: string,
  limit: number,
  withPayload = true,
): Promise<Array<{ id: string; payload: string | null; received_at: Date }>> {
  const page: Array<{ id: string; payload: string | null; received_at: Date }> = [];
  let after = afterPk;
  while (page.length < limit) {
    const wanted = limit - page.length;
    const calls = await db.query<{ id: string; payload: string | null; received_at: Date }>(rangeCalls(withPayload), [
      range.destinationId,
      range.since,
      range.until,
      after,
      wanted,
    ]);
    if (calls.rows.length === 0) break;
    const finished = await deliveredOf(db, range.destinationId, calls.rows, "delivery_history");
    page.push(...calls.rows.filter((call) => !finished.has(call.id)));
    if (calls.rows.length < wanted) break;
    after = calls.rows[calls.rows.length - 1]!.id;
  }
  return page;
}

/**
 * How many calls of the range have no delivery at the destination, as
 * countBackfillCandidates on one Postgres: the range's calls are read in
 * chunks, and each chunk's deliveries looked up on the destination's shard.
 */
export async function countBackfillCandidatesOnCitus(db: Queryable, range: BackfillRange): Promise<number> {
  let count = 0;
  let after = "0";
  for (;;) {
    const calls = await db.query<{ id: string }>(rangeCalls(false), [range.destinationId, range.since, range.until, after, countChunk]);
    if (calls.rows.length === 0) break;
    const delivered = await deliveredOf(db, range.destinationId, calls.rows, "deliveries");
    count += calls.rows.filter((call) => !delivered.has(call.id)).length;
    if (calls.rows.length < countChunk) break;
    after = calls.rows[calls.rows.length - 1]!.id;
  }
  return count;
}

/** Of these calls, those with a delivery to the destination in `table` (the history, or queue and history). */
async function deliveredOf(
  db: Queryable,
  destinationId: string,
  calls: ReadonlyArray<{ id: string }>,
  table: "delivery_history" | "deliveries",
): Promise<Set<string>> {
  const result = await db.query<{ message_pk: string }>(
    `SELECT DISTINCT message_pk FROM ${table} WHERE destination_id = $1 AND message_pk = ANY ($2::bigint[])`,
    [destinationId, calls.map((call) => call.id)],
  );
  return new Set(result.rows.map((row) => row.message_pk));
}
