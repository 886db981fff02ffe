/**
 * The lease fence of the job table, written once. A claim takes a lease:
 * it moves `lease_token` on and the claimer keeps the new value. Every other
 * change of a delivery's state is one of two kinds:
 *
 * - the lease holder finishing its work (a completion): it applies only
 *   while the row still carries the holder's token (`held`);
 * - anything else (cancel, expire, replay): it moves the token on and drops
 *   the lease (`revoke`), so a completion still in flight matches nothing.
 *
 * Every UPDATE of `deliveries` is built by `transitionSql`, which adds the
 * fence's SET items and condition; no module writes `lease_token` by hand.
 */

/** How a transition meets the lease. */
export type Fence =
  /** Take a new lease: `until` and `owner` are SQL expressions. */
  | { kind: "grant"; until: string; owner: string }
  /** Apply only while the row carries this token (an SQL expression); ends the lease. */
  | { kind: "held"; token: string }
  /** Take the lease from whoever holds it. */
  | { kind: "revoke" };

export interface Transition {
  fence: Fence;
  /** SET items besides the lease columns; may be empty. */
  set?: string;
  /** A FROM list (other tables or CTEs), without the keyword. */
  from?: string;
  /** The rows the transition applies to (the fence's condition is added). */
  where: string;
  /** A RETURNING list, without the keyword. */
  returning?: string;
}

/** The job table's alias in every transition: write conditions as `d.column`. */
export const jobAlias = "d";

function fenceSet(fence: Fence): string {
  switch (fence.kind) {
    case "grant":
      return `leased_until = ${fence.until}, lease_token = d.lease_token + 1, lease_owner = ${fence.owner}`;
    case "held":
      return "leased_until = NULL, lease_owner = NULL";
    case "revoke":
      return "leased_until = NULL, lease_owner = NULL, lease_token = d.lease_token + 1";
  }
}

function fenceWhere(fence: Fence): string {
  return fence.kind === "held" ? ` AND d.lease_token = ${fence.token}` : "";
}

/** One UPDATE of the job table with its lease fence. */
export function transitionSql(transition: Transition): string {
  const set = transition.set ? `${transition.set}, ${fenceSet(transition.fence)}` : fenceSet(transition.fence);
  return `UPDATE deliveries d SET ${set}${transition.from ? ` FROM ${transition.from}` : ""}
      WHERE (${transition.where})${fenceWhere(transition.fence)}${transition.returning ? `
      RETURNING ${transition.returning}` : ""}`;
}
