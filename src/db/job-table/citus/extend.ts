import type { Queryable } from "../../pool.js";
import { extendStatementSql, type HeldLease } from "../extend.js";
import { byDestination, forEachLimited } from "./per-destination.js";

const extendOnShard = extendStatementSql("$6::uuid");

/**
 * The heartbeat on Citus: the same statement as on one Postgres, once per
 * destination with every reference to the queue filtered to it, so each
 * runs on the one shard holding that destination's leases.
 */
export async function extendLeasesOnCitus(db: Queryable, now: Date, leaseMs: number, leases: readonly HeldLease[]): Promise<Set<string>> {
  const extended = new Set<string>();
  const groups = [...byDestination(leases)];
  await forEachLimited(groups, async ([destinationId, group]) => {
    const result = await db.query<{ id: string }>({
      text: extendOnShard,
      values: [now, leaseMs, group.map((l) => l.destinationId), group.map((l) => l.id), group.map((l) => l.leaseToken), destinationId],
    });
    for (const row of result.rows) extended.add(row.id);
  });
  return extended;
}
