import type { Queryable } from "../../pool.js";
import type { ExpiredReport } from "../../queries/destination-health.js";

/**
 * takeExpiredReports on Citus, where `FOR UPDATE SKIP LOCKED` works only in
 * a statement on one shard. Instead one UPDATE on every shard takes the
 * counts, joined to the row as the statement found it (a colocated self
 * join) for the count and time it reports. A concurrent report waits for
 * the row and then finds it taken (reported just now, so not due); an
 * expiry counted meanwhile is subtracted from, not lost: it is reported
 * next time.
 */
export async function takeExpiredReportsOnCitus(db: Queryable, now: Date, minIntervalMs: number): Promise<ExpiredReport[]> {
  const taken = await db.query<{ destination_id: string; count: number; since: Date | null }>(
    `UPDATE destination_health h
        SET expired_unreported = h.expired_unreported - due.expired_unreported, expired_reported_at = $1
       FROM destination_health due
      WHERE due.destination_id = h.destination_id
        AND h.expired_unreported > 0
        AND (h.expired_reported_at IS NULL
             OR h.expired_reported_at <= $1::timestamptz - make_interval(secs => $2::double precision / 1000))
        AND due.expired_unreported > 0
      RETURNING h.destination_id, due.expired_unreported AS count, due.expired_reported_at AS since`,
    [now, minIntervalMs],
  );
  if (taken.rows.length === 0) return [];
  const names = await db.query<{ id: string; name: string }>("SELECT id, name FROM destinations WHERE id = ANY($1::uuid[])", [
    taken.rows.map((row) => row.destination_id),
  ]);
  const byId = new Map(names.rows.map((row) => [row.id, row.name]));
  return taken.rows.map((r) => ({
    destinationId: r.destination_id,
    name: byId.get(r.destination_id) ?? null,
    count: r.count,
    since: r.since,
  }));
}
