import type { Queryable } from "../pool.js";
import { transitionSql } from "./fence.js";

const expireStatement = transitionSql({
  fence: { kind: "revoke" },
  set: "status = 'expired', finalized_at = $1",
  where: `d.status IN ('pending', 'retrying')
        AND d.destination_id IN (SELECT id FROM destinations WHERE NOT enabled)
        AND coalesce(d.first_attempt_at, d.created_at) < $1::timestamptz - make_interval(secs => $2::double precision / 1000)`,
});

/**
 * Pause semantics: a disabled destination's deliveries stay pending (the
 * claim skips them) until it is enabled again or their retry window is over
 * (measured from the first attempt, or from creation when there was none);
 * then this expires them. Enabled destinations' deliveries expire in the
 * loop, through a completion. The lease is revoked, so an attempt in flight
 * cannot overwrite the expiry. Returns how many expired.
 */
export async function expirePausedDeliveries(db: Queryable, now: Date, deadlineMs: number): Promise<number> {
  const result = await db.query(expireStatement, [now, deadlineMs]);
  return result.rowCount ?? 0;
}
