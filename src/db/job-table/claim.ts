import type { Queryable } from "../pool.js";
import { heldDestinationsSql, probingDestinationsSql, takeProbesSql } from "./claim-circuit.js";
import { transitionSql } from "./fence.js";
import {
  lockedBucketsSql,
  orderedDestinationsSql,
  orderingHeadSql,
  refillWaitMsSql,
  takeTokensSql,
  throttledDestinationsSql,
  tokenAllowanceSql,
} from "./flow-control.js";

/** A claimed delivery, with the message body it carries. */
export interface ClaimedDelivery {
  destinationId: string;
  id: string;
  leaseToken: number;
  attemptCount: number;
  firstAttemptAt: Date | null;
  retryUrls: string[] | null;
  payload: string;
  /** The message's id: Standard Webhooks' webhook-id, the same on every attempt. */
  messageId: string;
  /** When Waypost received the message (a warehouse's received_at). */
  receivedAt: Date;
  /** When the client says it sent the message (its `sentAt`; a warehouse's sent_at), null when it did not say. */
  sentAt?: Date | null;
  /** The source the message came in through (a broker's `{sourceId}` routing template). */
  sourceId?: string;
  /** The W3C trace context stored with the message, sent on every attempt (null: none). */
  traceparent?: string | null;
  tracestate?: string | null;
  /** Claimed as the probe of the destination's open circuit. */
  probe: boolean;
  /**
   * The destination's settings revision as this claim saw it (null: the
   * destination is gone): the loop reloads its settings only when it moves.
   */
  destinationRevision: number | null;
}

/**
 * What a claim takes. One object, so later filters (a destination's backoff,
 * rate limits) are new fields here, not new parameters.
 */
export interface ClaimOptions {
  now: Date;
  /** Most deliveries in all. */
  limit: number;
  /** Most deliveries of one destination not listed in `room`. */
  perDestinationLimit: number;
  /** Destinations this process is already working, and how many more of each it takes (0: none). */
  room: ReadonlyMap<string, number>;
  leaseMs: number;
  owner: string;
  /**
   * Deliveries this process still works (queued or in flight) whose lease,
   * as far as it knows, has run out: it never claims them back (their
   * heartbeat extends them, while no other process took them).
   */
  keep?: readonly string[];
}

/** What one claim took, and when rate limits let the next one take more. */
export interface ClaimResult {
  deliveries: ClaimedDelivery[];
  /**
   * Milliseconds until a rate-limited destination this claim found short of
   * tokens has some again; undefined when none was.
   */
  refillWaitMs: number | undefined;
}

// The lease the claim takes: $1 now, $4 lease length in ms, $5 this process.
// The rows are the ones `due` locked, found again by their tuple ids (a TID
// scan). A join to `due` on the key let the planner, once the prepared
// statement went generic and estimated `due` at its LIMIT, hash-join a
// sequential scan of the whole queue on every claim: the claim then cost
// O(queue) (130 µs per delivery with 60,000 queued, burn-down at a third of
// the bare loop). The tuple ids are stable here: `due` holds the rows'
// locks, so nothing moves them before this UPDATE.
const claimFence = {
  kind: "grant",
  until: "$1::timestamptz + make_interval(secs => $4::double precision / 1000)",
  owner: "$5",
} as const;
const claimTransition = transitionSql({
  fence: claimFence,
  from: "messages m",
  where: "d.ctid = ANY (ARRAY(SELECT row_id FROM due)) AND m.id = d.message_pk",
  returning: `d.destination_id, d.id, d.lease_token, d.attempt_count, d.first_attempt_at, d.retry_urls, m.payload,
              m.message_id, m.source_id, m.received_at, m.sent_at, m.traceparent, m.tracestate, d.id IN (SELECT probe_delivery_id FROM probes) AS probe`,
});

// On Citus the messages live on other shards than the deliveries: the lease
// is taken without them and the claimer reads them afterwards by id.
function scopedClaimTransition(destination: string): string {
  return transitionSql({
    fence: claimFence,
    where: `d.destination_id = ${destination} AND d.ctid = ANY (ARRAY(SELECT row_id FROM due))`,
    returning: `d.destination_id, d.id, d.lease_token, d.attempt_count, d.first_attempt_at, d.retry_urls, d.message_pk,
              d.id IN (SELECT probe_delivery_id FROM probes) AS probe`,
  });
}

/**
 * The claim statement: over every destination, or, given `destination` (an
 * SQL expression, a parameter), over that one destination alone, with every
 * reference to a table distributed by destination filtered to it, so Citus
 * sends the whole statement to the one shard holding it. The one-destination
 * form reads no message: its rows return `message_pk` instead of the
 * message's columns. Parameters: $1 now, $2 limit, $3 per-destination
 * limit, $4 lease ms, $5 owner, $6/$7 the room (destinations, free), and
 * `keep` (the ids this process still works: ClaimOptions.keep).
 */
export function claimStatementSql(destination?: string, keep = "$8"): string {
  return `WITH room AS (
       SELECT * FROM unnest($6::uuid[], $7::int[]) AS r(destination_id, free)
     ), probing AS (
       ${probingDestinationsSql("$1", destination)}
     ), buckets AS MATERIALIZED (
       ${lockedBucketsSql("$1", destination)}
     ), throttled AS (
       ${throttledDestinationsSql}
     ), ordered AS (
       ${orderedDestinationsSql}
     ), lanes AS (
       -- The destinations this claim may take from, and how many of each:
       -- one (the probe) of a probing destination, else its room, capped by
       -- its whole tokens (without a rate limit, by nothing more: capped by
       -- the default hold, a batching kind's larger room went unused).
       -- Chosen before any delivery is read.
       SELECT dst.id AS destination_id,
              least(CASE WHEN dst.id IN (SELECT destination_id FROM probing) THEN 1 ELSE coalesce(r.free, $3) END,
                    ${tokenAllowanceSql("b", "$2")}) AS cap
         FROM destinations dst
         LEFT JOIN room r ON r.destination_id = dst.id
         LEFT JOIN buckets b ON b.destination_id = dst.id
        WHERE dst.enabled${destination === undefined ? "" : ` AND dst.id = ${destination}`}
          AND dst.id NOT IN (SELECT destination_id FROM room WHERE free <= 0)
          AND dst.id NOT IN (${heldDestinationsSql("$1", destination)})
          AND dst.id NOT IN (SELECT id FROM throttled)
     ), chosen AS (
       -- Each lane's oldest due deliveries, over delivery_queue_lane_idx
       -- (destination_id, run_at), at most its cap, then the oldest of all.
       -- The lane's LIMIT is $2, not its cap: a LIMIT that is not a constant
       -- or parameter is costed at 10 % of the lane's backlog, which on a
       -- large backlog prices the statement past jit_above_cost, and
       -- compiling it (tens of ms) then costs more than the claim itself.
       SELECT c.destination_id, c.id FROM (
         SELECT c.destination_id, c.id, c.run_at, l.cap,
                row_number() OVER (PARTITION BY c.destination_id ORDER BY c.run_at) AS rank
           FROM lanes l
          CROSS JOIN LATERAL (
            SELECT d.destination_id, d.id, d.run_at FROM delivery_queue d
             WHERE d.destination_id = ${destination ?? "l.destination_id"}
               AND d.run_at <= $1
               AND (d.leased_until IS NULL OR d.leased_until <= $1)
               AND d.id <> ALL (${keep}::bigint[])
               AND ${orderingHeadSql("d", destination)}
             ORDER BY d.run_at
             LIMIT $2) c) c
        WHERE c.rank <= c.cap
        ORDER BY c.run_at LIMIT $2
     ), probes AS (
       ${takeProbesSql("(SELECT destination_id, id FROM chosen WHERE destination_id IN (SELECT destination_id FROM probing))", "$1", "$4", destination)}
     ), due AS (
       -- One primary-key probe per chosen delivery (a join here lets the
       -- planner pick a hash join over the whole queue), locked and
       -- re-checked: another claim may have taken it since the scan.
       SELECT q.destination_id, q.id, q.row_id FROM chosen c
        CROSS JOIN LATERAL (
          SELECT d.destination_id, d.id, d.ctid AS row_id FROM delivery_queue d
           WHERE d.destination_id = ${destination ?? "c.destination_id"} AND d.id = c.id AND d.run_at <= $1
             AND (d.leased_until IS NULL OR d.leased_until <= $1)
             AND (d.destination_id NOT IN (SELECT destination_id FROM probing) OR d.id IN (SELECT probe_delivery_id FROM probes))
           FOR UPDATE OF d SKIP LOCKED) q
     ), claimed AS (
       ${destination === undefined ? claimTransition : scopedClaimTransition(destination)}
     ), taken AS (
       ${takeTokensSql("$1", destination)}
     )
     -- One row even when nothing was claimed, to carry the refill wait.
     -- The revision tells the loop whether its copy of the settings is current.
     SELECT w.refill_wait_ms, c.*, dr.revision AS destination_revision
       FROM (SELECT ${refillWaitMsSql}::float8 AS refill_wait_ms) w
       LEFT JOIN claimed c ON true
       LEFT JOIN destinations dr ON dr.id = c.destination_id`;
}

const singleNodeClaim = claimStatementSql();

/**
 * Claims up to `limit` due deliveries of enabled destinations, no more of
 * one destination than this process has room for, skipping those backing
 * off or with an open circuit (one probe when due: claim-circuit.ts) and
 * keeping rate limits and per-user order (flow-control.ts). The lanes are
 * chosen before any delivery is read, so a backlog the claim cannot take
 * from is never read; SKIP LOCKED lets processes claim at once, and a lease
 * that runs out makes its delivery due again with no sweeper.
 */
export async function claimDeliveries(db: Queryable, options: ClaimOptions): Promise<ClaimResult> {
  const result = await db.query<ClaimRow & { refill_wait_ms: number | null }>({
    // Not prepared: a generic plan made while the queue was nearly empty
    // read every queued row of the lane per delivery once it filled (700 ms
    // per claim at 20,000 queued; planning costs 0.1 ms). The heartbeat and
    // the completion are planned per call for the same reason.
    text: singleNodeClaim,
    values: [
      options.now,
      options.limit,
      options.perDestinationLimit,
      options.leaseMs,
      options.owner,
      [...options.room.keys()],
      [...options.room.values()],
      options.keep ?? [],
    ],
  });
  const refill = result.rows[0]?.refill_wait_ms;
  return {
    refillWaitMs: refill === null || refill === undefined ? undefined : Math.max(0, refill),
    deliveries: result.rows.filter((row) => row.destination_id !== null).map((row) => claimedDelivery(row)),
  };
}

/** A claim statement's row, once its message is known (the single-node statement joins it). */
export interface ClaimRow {
  destination_id: string | null;
  id: string;
  lease_token: number;
  attempt_count: number;
  first_attempt_at: Date | null;
  retry_urls: string[] | null;
  payload: string;
  message_id: string;
  source_id: string;
  received_at: Date;
  sent_at: Date | null;
  traceparent: string | null;
  tracestate: string | null;
  probe: boolean;
  destination_revision: number | null;
}

/** A claimed delivery as the claim returns it. */
export function claimedDelivery(row: ClaimRow): ClaimedDelivery {
  return {
    destinationId: row.destination_id!,
    id: row.id,
    leaseToken: row.lease_token,
    attemptCount: row.attempt_count,
    firstAttemptAt: row.first_attempt_at,
    retryUrls: row.retry_urls,
    payload: row.payload,
    messageId: row.message_id,
    sourceId: row.source_id,
    receivedAt: row.received_at,
    sentAt: row.sent_at,
    traceparent: row.traceparent,
    tracestate: row.tracestate,
    probe: row.probe,
    destinationRevision: row.destination_revision,
  };
}
