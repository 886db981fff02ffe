import type { Queryable } from "../pool.js";
import { transitionSql } from "./fence.js";

/** A lease a process holds: the delivery and the token its claim got. */
export interface HeldLease {
  destinationId: string;
  id: string;
  leaseToken: number;
}

// $1 now, $2 lease length in ms; the leases travel as three arrays.
const extendTransition = transitionSql({
  fence: { kind: "extend", token: "h.lease_token", until: "$1::timestamptz + make_interval(secs => $2::double precision / 1000)" },
  from: "(SELECT * FROM unnest($3::uuid[], $4::bigint[], $5::int[]) AS h(destination_id, id, lease_token)) h",
  where: "d.destination_id = h.destination_id AND d.id = h.id AND d.status IN ('pending', 'retrying')",
  returning: "d.id",
});

/**
 * The heartbeat: the holder of these leases is still working them (they are
 * queued in its process or their requests are in flight), so each lease
 * that is still the holder's runs `leaseMs` from `now` again. One statement
 * for every lease a process holds. Returns the ids whose lease was
 * extended; the others are no longer the holder's (taken over after the
 * lease ran out, cancelled, expired, replayed, or already completed) and
 * must not be sent by it.
 */
export async function extendLeases(db: Queryable, now: Date, leaseMs: number, leases: readonly HeldLease[]): Promise<Set<string>> {
  if (leases.length === 0) return new Set();
  const result = await db.query<{ id: string }>({
    name: "waypost_extend_leases",
    text: extendTransition,
    values: [now, leaseMs, leases.map((l) => l.destinationId), leases.map((l) => l.id), leases.map((l) => l.leaseToken)],
  });
  return new Set(result.rows.map((r) => r.id));
}
