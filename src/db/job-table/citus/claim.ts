import type { Queryable } from "../../pool.js";
import { heldDestinationsSql } from "../claim-circuit.js";
import { claimedDelivery, claimStatementSql, type ClaimOptions, type ClaimResult, type ClaimRow } from "../claim.js";
import { lockedBucketsSql, refillWaitMsSql, throttledDestinationsSql } from "../flow-control.js";
import { forEachLimited } from "./per-destination.js";

const claimOnShard = claimStatementSql("$8::uuid", "$9");

/**
 * The destinations with nothing the claim could take at `now`: no queued
 * delivery due and unleased. The claim leaves them out, so an idle
 * destination costs it no statement of its own (one per enabled destination,
 * due or not, made 200 idle destinations beside a busy one cut its burn-down
 * more than eightfold). This is one statement over the shards, pushed down
 * whole to each: every destination's rate bucket (each destination has one,
 * on its own shard) with an index probe of its queue
 * (delivery_queue_lane_idx: with the queue analyzed, each shard plans a
 * nested-loop anti join), so it costs one probe per destination, not a
 * scan of the backlog (a busy destination's probe steps over its leased
 * deliveries, at most those in flight). Kept a plain NOT EXISTS: forced to a
 * per-row subplan (OFFSET 0), a shard read its whole queue per destination. It lists the idle destinations rather
 * than the busy ones so that a destination without a bucket row is still
 * claimed from. Exact at `now`, nothing cached: a retry due later, or a
 * lease that runs out, is seen by the first claim after that.
 */
export function idleDestinationsSql(now: string): string {
  return `SELECT w.destination_id FROM destination_rate_buckets w
           WHERE NOT EXISTS (
             SELECT 1 FROM delivery_queue d
              WHERE d.destination_id = w.destination_id AND d.run_at <= ${now}
                AND (d.leased_until IS NULL OR d.leased_until <= ${now}))`;
}

// The destinations a claim may take from, read across the shards without
// locking anything (the per-destination statement locks and checks again):
// enabled, with room, not held back by endpoint health, not out of tokens,
// and with due work (idleDestinationsSql). A second row carries when an
// out-of-tokens destination has tokens again.
// `claimed` is empty: the refill wait is the one before any claim.
const candidatesStatement = `WITH buckets AS MATERIALIZED (
       ${lockedBucketsSql("$1", undefined, false)}
     ), throttled AS (
       ${throttledDestinationsSql}
     ), claimed AS (
       SELECT NULL::uuid AS destination_id WHERE false
     )
     SELECT dst.id AS destination_id, NULL::float8 AS refill_wait_ms
       FROM destinations dst
      WHERE dst.enabled
        AND dst.id <> ALL ($2::uuid[])
        AND dst.id NOT IN (${heldDestinationsSql("$1")})
        AND dst.id NOT IN (SELECT id FROM throttled)
        AND dst.id NOT IN (${idleDestinationsSql("$1")})
     UNION ALL
     SELECT NULL, ${refillWaitMsSql}::float8`;

/** The columns a claimed delivery takes from its message. */
type MessageColumns = Pick<ClaimRow, "payload" | "message_id" | "source_id" | "received_at" | "sent_at" | "traceparent" | "tracestate">;

type ShardRow = Omit<ClaimRow, keyof MessageColumns> & { refill_wait_ms: number | null; message_pk: string };

type MessageRow = MessageColumns & { id: string };

/**
 * The claim on Citus, where every statement must stay on one shard: the
 * candidate destinations (those with due work) are read first; then today's
 * claim statement runs
 * once per destination, filtered to it (its queue rows, rate bucket and
 * health row share a shard), until `limit` is reached; then the claimed
 * deliveries' messages, which are distributed by their own id, are read in
 * one statement. Each claim starts at the next destination in turn, so one
 * destination's backlog does not keep the others waiting. Destinations run
 * a few at a time, as many as the deliveries still wanted allow: a
 * destination's statement may take up to its room, and the room of all the
 * destinations in flight never passes what is left of `limit`.
 */
export function createCitusClaim(): (db: Queryable, options: ClaimOptions) => Promise<ClaimResult> {
  let turn = 0;
  return async function claimDeliveriesOnCitus(db, options) {
    const full = [...options.room].filter(([, free]) => free <= 0).map(([id]) => id);
    const found = await db.query<{ destination_id: string | null; refill_wait_ms: number | null }>({
      text: candidatesStatement,
      values: [options.now, full],
    });
    const waits: number[] = found.rows.flatMap((row) => (row.refill_wait_ms === null ? [] : [row.refill_wait_ms]));
    const candidates = found.rows.flatMap((row) => (row.destination_id === null ? [] : [row.destination_id])).sort();
    const start = candidates.length === 0 ? 0 : turn++ % candidates.length;
    const order = [...candidates.slice(start), ...candidates.slice(0, start)];
    const claimed: ShardRow[] = [];
    let next = 0;
    while (next < order.length && claimed.length < options.limit) {
      // As many destinations as the room left allows (at least one).
      const left = options.limit - claimed.length;
      const wave: Array<{ destinationId: string; limit: number }> = [];
      let planned = 0;
      while (next < order.length && (wave.length === 0 || planned < left)) {
        const destinationId = order[next]!;
        const cap = Math.min(options.room.get(destinationId) ?? options.perDestinationLimit, left - planned);
        if (wave.length > 0 && cap <= 0) break;
        wave.push({ destinationId, limit: Math.max(1, cap) });
        planned += Math.max(1, cap);
        next++;
      }
      const results = await forEachLimited(wave, ({ destinationId, limit }) =>
        db.query<ShardRow>({
          text: claimOnShard,
          values: [
            options.now,
            limit,
            options.perDestinationLimit,
            options.leaseMs,
            options.owner,
            [...options.room.keys()],
            [...options.room.values()],
            destinationId,
            options.keep ?? [],
          ],
        }),
      );
      for (const result of results) {
        const wait = result.rows[0]?.refill_wait_ms;
        if (wait !== null && wait !== undefined) waits.push(wait);
        for (const row of result.rows) if (row.destination_id !== null) claimed.push(row);
      }
    }
    const messages = await readMessages(db, claimed);
    return {
      refillWaitMs: waits.length === 0 ? undefined : Math.max(0, Math.min(...waits)),
      deliveries: claimed.flatMap((row) => {
        const message = messages.get(row.message_pk);
        // A message deleted meanwhile (its deliveries go with it): nothing to send.
        return message ? [claimedDelivery({ ...row, ...message, id: row.id })] : [];
      }),
    };
  };
}

async function readMessages(db: Queryable, rows: readonly ShardRow[]): Promise<Map<string, MessageRow>> {
  if (rows.length === 0) return new Map();
  const result = await db.query<MessageRow>(
    `SELECT id, payload, message_id, source_id, received_at, sent_at, traceparent, tracestate
       FROM messages WHERE id = ANY ($1::bigint[])`,
    [[...new Set(rows.map((row) => row.message_pk))]],
  );
  return new Map(result.rows.map((row) => [row.id, row]));
}
