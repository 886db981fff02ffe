import type { Queryable } from "../pool.js";
import { finishCtes } from "./fence.js";

function expiredCtes(destination: string | undefined): string {
  return finishCtes("expired", {
    fence: { kind: "revoke" },
    status: "'expired'",
    finalizedAt: "$1::timestamptz",
    where: `${destination === undefined ? "" : `d.destination_id = ${destination} AND `}(d.destination_id IN (SELECT id FROM destinations WHERE NOT enabled)
             OR d.destination_id IN (SELECT destination_id FROM destination_health WHERE ${destination === undefined ? "" : `destination_id = ${destination} AND `}state <> 'closed'))
        AND coalesce(d.first_attempt_at, d.created_at) < $1::timestamptz - make_interval(secs => $2::double precision / 1000)`,
  });
}

// The expiries are counted per destination for the operator's
// destination.deliveries_expired event (endpoint health reports them).
// Given `destination` (an SQL expression), only that destination's, every
// reference to a table distributed by destination filtered to it (the Citus
// driver runs it once per paused or unhealthy destination).
export function expireStatementSql(destination?: string): string {
  return `WITH ${expiredCtes(destination)}, counted AS (
    INSERT INTO destination_health (destination_id, expired_unreported, updated_at)
    SELECT destination_id, count(*), $1 FROM expired GROUP BY destination_id ORDER BY destination_id
    ON CONFLICT (destination_id) DO UPDATE
      SET expired_unreported = destination_health.expired_unreported + excluded.expired_unreported
    RETURNING 1
  )
  SELECT count(*)::int AS n FROM expired`;
}

const expireStatement = expireStatementSql();

/**
 * Deliveries the claim holds back, and so never attempts, expire here: those
 * of a paused (disabled) destination and those of a destination whose
 * circuit is open. They stay pending until the destination is enabled again
 * or its circuit closes, or until their retry window is over (measured from
 * the first attempt, or from creation when there was none); then this
 * expires them. Other deliveries expire in the loop, through a completion.
 * The lease is revoked, so an attempt in flight (a probe) cannot overwrite
 * the expiry. Returns how many expired.
 */
export async function expirePausedDeliveries(db: Queryable, now: Date, deadlineMs: number): Promise<number> {
  const result = await db.query<{ n: number }>(expireStatement, [now, deadlineMs]);
  return result.rows[0]?.n ?? 0;
}
