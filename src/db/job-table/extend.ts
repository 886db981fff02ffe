import type { Queryable } from "../pool.js";
import { fenceCondition, transitionSql } from "./fence.js";

/** A lease a process holds: the delivery and the token its claim got. */
export interface HeldLease {
  destinationId: string;
  id: string;
  leaseToken: number;
}

// $1 now, $2 lease length in ms; the leases travel as three arrays.
// Each lease's row is found by one primary-key probe (a LATERAL subquery
// with LIMIT, which the planner cannot turn into a join), checked against
// the fence and locked there, then updated through its tuple id (a TID
// scan). Joined to the leases on the key instead, the planner took the
// fence's `leased_until IS NOT NULL` for nearly no rows (statistics of a
// queue at rest, with no lease) and scanned the whole queue, matching every
// row against every lease: 300 ms per heartbeat with 60,000 queued.
// The tuple ids are safe here: a row changed by another transaction since
// this statement's snapshot fails the fence (only the holder's own
// completion or a revoke can change a held lease), so no locked row is a
// version the snapshot cannot see. The completion, which a heartbeat can
// race, writes through the key instead.
const until = "$1::timestamptz + make_interval(secs => $2::double precision / 1000)";
const fence = { kind: "extend", token: "k.lease_token", until } as const;
/**
 * The heartbeat statement; given `destination` (an SQL expression, a
 * parameter), for leases of that one destination only, every reference to
 * the queue filtered to it (Citus then runs it on that destination's shard).
 */
export function extendStatementSql(destination?: string): string {
  return `WITH held AS (
       SELECT q.row_id
         FROM unnest($3::uuid[], $4::bigint[], $5::int[]) AS k(destination_id, id, lease_token)
        CROSS JOIN LATERAL (
          SELECT l.ctid AS row_id FROM delivery_queue l
           WHERE l.destination_id = ${destination ?? "k.destination_id"} AND l.id = k.id AND l.status IN ('pending', 'retrying')
             AND ${fenceCondition(fence, "l")}
           LIMIT 1 FOR UPDATE) q
     )
     ${transitionSql({
       fence,
       fenceCheckedOnLock: true,
       where: `${destination === undefined ? "" : `d.destination_id = ${destination} AND `}d.ctid = ANY (ARRAY(SELECT row_id FROM held))`,
       returning: "d.id",
     })}`;
}

const extendTransition = extendStatementSql();

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
    // Planned for each heartbeat, not prepared: see claimDeliveries.
    text: extendTransition,
    values: [now, leaseMs, leases.map((l) => l.destinationId), leases.map((l) => l.id), leases.map((l) => l.leaseToken)],
  });
  return new Set(result.rows.map((r) => r.id));
}
