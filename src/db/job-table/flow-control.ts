/**
 * The claim statement's flow-control parts, as SQL fragments:
 *
 *   rate limit  destination_rate_buckets: `tokens` as of `refilled_at`,
 *               filling at max_requests_per_second, holding half a second's
 *               worth (at least one token)
 *   ordering    with per-user ordering, a delivery is claimable only when no
 *               other queued delivery of its destination and ordering_key has
 *               a smaller id (probed over delivery_queue_ordering_idx)
 *
 * A claim locks its destinations' buckets SKIP LOCKED (a bucket another
 * claim holds means no tokens for this one) and writes back what is left in
 * the statement that takes the leases: so all workers together stay within
 * a destination's rate, rate × (T + 0.5) in any T seconds.
 */

/** Bucket size in tokens: half a second of the rate, at least one token. */
export function bucketCapacitySql(rate: string): string {
  return `greatest(1.0, ${rate} * 0.5)`;
}

/**
 * Tokens one wake-up of the loop waits for: an eighth of a second's worth
 * (at least one, at most the capacity), so a limited destination costs a
 * few claims a second, not one per token.
 */
export function wakeTokensSql(rate: string): string {
  return `least(${bucketCapacitySql(rate)}, greatest(1.0, ${rate} / 8.0))`;
}

/**
 * CTE body: the rate-limited destinations' buckets this claim takes from,
 * locked, with their tokens refilled up to `now`.
 */
export function lockedBucketsSql(now: string, destination?: string, lock = true): string {
  return `SELECT b.destination_id, d.max_requests_per_second AS rate,
         least(${bucketCapacitySql("d.max_requests_per_second")},
               b.tokens + d.max_requests_per_second
                 * greatest(0, extract(epoch FROM (${now}::timestamptz - b.refilled_at)))) AS tokens
    FROM destination_rate_buckets b JOIN destinations d ON d.id = b.destination_id
   WHERE d.enabled AND d.max_requests_per_second > 0${destination === undefined ? "" : ` AND b.destination_id = ${destination}`}${
     lock
       ? `
   FOR NO KEY UPDATE OF b SKIP LOCKED`
       : ""
   }`;
}

/**
 * CTE body: rate-limited destinations this claim may not take any delivery
 * of (no whole token, or another claim holds the bucket), given the CTE
 * named `buckets` (lockedBucketsSql).
 */
export const throttledDestinationsSql = `SELECT d.id FROM destinations d
   WHERE d.enabled AND d.max_requests_per_second > 0
     AND NOT EXISTS (SELECT 1 FROM buckets b WHERE b.destination_id = d.id AND b.tokens >= 1)`;

/** How many deliveries of a destination the claim may take, given `buckets` row `b` (NULL: unlimited). */
export function tokenAllowanceSql(bucket: string, otherwise: string): string {
  return `coalesce(floor(${bucket}.tokens)::int, ${otherwise})`;
}

/**
 * CTE body: writes back the buckets the claim took from, given `buckets`
 * and `claimed` (the UPDATE ... RETURNING destination_id of the lease).
 * `destination`, here and in lockedBucketsSql, narrows to one destination's
 * bucket (the Citus driver's per-destination claim); lockedBucketsSql's
 * `lock` false reads the buckets without locking them (the Citus driver's
 * look across shards, before it claims).
 */
export function takeTokensSql(now: string, destination?: string): string {
  return `UPDATE destination_rate_buckets t
      SET tokens = b.tokens - n.taken, refilled_at = ${now}
     FROM buckets b
     JOIN (SELECT destination_id, count(*) AS taken FROM claimed GROUP BY destination_id) n USING (destination_id)
    WHERE t.destination_id = b.destination_id${destination === undefined ? "" : ` AND t.destination_id = ${destination}`}
   RETURNING t.destination_id`;
}

/**
 * Scalar: milliseconds until the first of this claim's limited destinations
 * has a wake-up's worth of tokens again (NULL: none is short of tokens).
 */
export const refillWaitMsSql = `(SELECT min((${wakeTokensSql("b.rate")} - (b.tokens - coalesce(n.taken, 0))) / b.rate * 1000)
     FROM buckets b
     LEFT JOIN (SELECT destination_id, count(*) AS taken FROM claimed GROUP BY destination_id) n USING (destination_id)
    WHERE b.tokens - coalesce(n.taken, 0) < ${wakeTokensSql("b.rate")})`;

/**
 * Predicate on a candidate delivery `d`: false when its destination orders
 * per user and an earlier delivery of the same user is unfinished. An OR,
 * so the planner keeps the EXISTS a per-row index probe (never a join over
 * the table); `ordered` is the CTE of per-user-ordered destinations.
 * `destination` names the delivery's destination for the probe (on Citus the
 * claim's one destination, so the probe stays on its shard).
 */
export function orderingHeadSql(d: string, destination = `${d}.destination_id`): string {
  return `(${d}.ordering_key IS NULL
        OR ${d}.destination_id NOT IN (SELECT id FROM ordered)
        OR NOT EXISTS (SELECT 1 FROM delivery_queue e
                        WHERE e.destination_id = ${destination} AND e.ordering_key = ${d}.ordering_key
                          AND e.ordering_key IS NOT NULL AND e.id < ${d}.id))`;
}

/** CTE body: destinations with per-user ordering. */
export const orderedDestinationsSql = "SELECT id FROM destinations WHERE enabled AND ordering = 'per_user'";
