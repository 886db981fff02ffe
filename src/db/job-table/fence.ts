/**
 * The lease fence of the job table, written once. A claim takes a lease:
 * it moves `lease_token` on and the claimer keeps the new value. Every other
 * change of a delivery's state is one of two kinds:
 *
 * - the lease holder finishing its work (a completion): it applies only
 *   while the row still carries the holder's token and the lease has not
 *   been ended (`held`), so it applies once;
 * - anything else (cancel, expire, replay): it moves the token on and drops
 *   the lease (`revoke`), so a completion still in flight matches nothing.
 *
 * A holder still working a delivery may also push its lease's end out
 * (`extend`, the heartbeat): only while the row carries its token and the
 * lease is not yet ended, so it never revives a lease that another process
 * took over or that the holder's own completion ended.
 *
 * Every UPDATE of `deliveries` is built by `transitionSql`, which adds the
 * fence's SET items and condition; no module writes `lease_token` by hand.
 *
 * A transition that moves `status` names the new status in `status` (not in
 * `set`), and the fence stamps `finished_xid` with it: the id of the
 * transaction that moved the delivery into a final state (NULL while
 * unfinished), which the finish feed reads. It used to be a row trigger;
 * stamping it here costs nothing per row, and every status change passes
 * through here anyway.
 */

/** How a transition meets the lease. */
export type Fence =
  /** Take a new lease: `until` and `owner` are SQL expressions. */
  | { kind: "grant"; until: string; owner: string }
  /** Apply only while the row carries this token (an SQL expression) and the lease is not ended; ends it. */
  | { kind: "held"; token: string }
  /** Take the lease from whoever holds it. */
  | { kind: "revoke" }
  /** Move the lease's end to `until` while the row carries this token and the lease has not ended (both SQL expressions). */
  | { kind: "extend"; token: string; until: string };

export interface Transition {
  fence: Fence;
  /** The new status (an SQL expression), when the transition moves it. */
  status?: string;
  /** SET items besides the lease and status columns; may be empty. */
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
    case "extend":
      return `leased_until = ${fence.until}`;
  }
}

function fenceWhere(fence: Fence): string {
  switch (fence.kind) {
    case "held":
    case "extend":
      // A completion ends the lease (leased_until NULL) but keeps the token:
      // the holder's own later changes (a second result, a heartbeat) must
      // not apply after it.
      return ` AND d.lease_token = ${fence.token} AND d.leased_until IS NOT NULL`;
    default:
      return "";
  }
}

/**
 * The status and its finish stamp. A status that does not change keeps its
 * stamp, so a finished delivery is reported by the feed once (as the
 * trigger this replaces did: it ran only on a change).
 */
function statusSet(status: string): string {
  return `status = ${status},
              finished_xid = CASE WHEN (${status}) IN ('pending', 'retrying') THEN NULL
                                  WHEN (${status}) = d.status THEN d.finished_xid
                                  ELSE pg_current_xact_id() END`;
}

/** One UPDATE of the job table with its lease fence. */
export function transitionSql(transition: Transition): string {
  const items = [transition.status === undefined ? "" : statusSet(transition.status), transition.set ?? "", fenceSet(transition.fence)];
  const set = items.filter((item) => item !== "").join(", ");
  return `UPDATE deliveries d SET ${set}${transition.from ? ` FROM ${transition.from}` : ""}
      WHERE (${transition.where})${fenceWhere(transition.fence)}${
        transition.returning
          ? `
      RETURNING ${transition.returning}`
          : ""
      }`;
}
