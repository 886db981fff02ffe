import type { Queryable } from "../pool.js";

// A delivery's attempts are of two kinds: its own requests (delivery_attempts
// rows) and the batch operations it was part of (delivery_batch_attempts
// rows, referenced from the delivery with its attempt numbers). Readers see
// them as one list, with the columns of delivery_attempts.

/**
 * SQL for the attempts of the deliveries named by two parallel array
 * parameters (destination ids as uuid[], delivery ids as bigint[]), with
 * the columns destination_id, delivery_id, attempt, url_index, url,
 * attempted_at, outcome, status_code, error, latency_ms, response_body,
 * destination_revision, discarded_values, subscription, method, request_headers, request_body,
 * request_body_bytes, batch_id, batch_calls, batch_delivery_ids (NULL for an attempt of its own),
 * call_pks (a row the call log wrote: the calls it carried, the first 101; NULL otherwise), position. A batch attempt is found by its key in each day's partition from the delivery's
 * creation on. `position` orders the batch operations of one attempt (a batch refused as too
 * large, then its halves: the order they were made in); a delivery's own rows have 0.
 */
export function attemptsOfDeliveriesSql(destinationIds: string, deliveryIds: string): string {
  return `SELECT a.destination_id, a.delivery_id, a.attempt, a.url_index, a.url, a.attempted_at, a.outcome, a.status_code, a.error,
            a.latency_ms, a.response_body, a.destination_revision, a.discarded_values, a.subscription, a.method,
            a.request_headers, a.request_body, a.request_body_bytes, NULL::uuid AS batch_id, NULL::integer AS batch_calls,
            NULL::bigint[] AS batch_delivery_ids, NULL::bigint[] AS call_pks, 0::bigint AS position
       FROM delivery_attempts a
      WHERE (a.destination_id, a.delivery_id) IN (SELECT * FROM unnest(${destinationIds}, ${deliveryIds}))
     UNION ALL
     SELECT d.destination_id, d.id, r.attempt, b.url_index, b.url, b.attempted_at, b.outcome, b.status_code, b.error,
            b.latency_ms, b.response_body, b.destination_revision, NULL::integer, b.subscription, b.method,
            b.request_headers, b.request_body, b.request_body_bytes, b.batch_id, b.calls, b.delivery_ids, b.call_pks[1:101], r.position
       FROM unnest(${destinationIds}, ${deliveryIds}) AS l(destination_id, id)
       JOIN deliveries d ON d.destination_id = l.destination_id AND d.id = l.id
      CROSS JOIN LATERAL unnest(d.batch_attempts, d.batch_attempt_numbers) WITH ORDINALITY AS r(batch_attempt, attempt, position)
       JOIN delivery_batch_attempts b
         ON b.destination_id = d.destination_id AND b.id = r.batch_attempt AND b.attempted_at >= d.created_at`;
}

/**
 * A read of the attempts of deliveries (parallel lists of destination and
 * delivery ids): the rows `select` makes of them, given them as a FROM
 * item. No statement when no delivery is asked.
 */
export function attemptsReader<T extends object>(
  select: (attempts: string) => string,
): (db: Queryable, destinationIds: readonly string[], deliveryIds: readonly string[]) => Promise<T[]> {
  const text = select(`(${attemptsOfDeliveriesSql("$1::uuid[]", "$2::bigint[]")})`);
  return async (db, destinationIds, deliveryIds) =>
    deliveryIds.length === 0 ? [] : (await db.query<T>(text, [destinationIds, deliveryIds])).rows;
}

/**
 * SQL for a destination's attempts made since a time (both SQL
 * expressions), one row per delivery's attempt as before batches: a batch
 * attempt stands for each delivery that references it. Columns:
 * attempted_at, outcome, latency_ms, discarded_values. Each part reads its
 * table's (destination_id, attempted_at) index.
 */
export function attemptsSinceSql(destinationId: string, since: string): string {
  return `SELECT attempted_at, outcome, latency_ms, discarded_values
       FROM delivery_attempts
      WHERE destination_id = ${destinationId} AND attempted_at >= ${since}
     UNION ALL
     SELECT b.attempted_at, b.outcome, b.latency_ms, CASE WHEN n = 1 THEN b.discarded_values END
       FROM delivery_batch_attempts b
      CROSS JOIN LATERAL generate_series(1, b.deliveries) AS n
      WHERE b.destination_id = ${destinationId} AND b.attempted_at >= ${since}`;
}
