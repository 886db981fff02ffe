import { and, Params, profileCallsSql, type DeliveryFilter, type Query } from "../job-table/filter.js";
import type { Queryable } from "../pool.js";
import type { SearchOptions, SearchRow } from "./delivery-rows.js";
import { feedPage, feedQuery, inFeedSnapshot, type readFinishFeed, searchDeliveries, type FeedPosition } from "./delivery-search.js";
import {
  derivedColumns,
  derivedJoins,
  derivedPredicates,
  parseLogDeliveryId,
  selectLogDestinationIds,
  type LogDeliveryRow,
} from "./log-deliveries.js";
import { heldByBatchSql } from "../call-log/log-read.js";

// ListDeliveries and the finish feed with the derived deliveries of the
// destinations on the log merged in, in the same order and pages. The
// per-call statements run as they are (with no destination on the log in
// reach, alone). Both orders are total over both kinds: created
// (created_at, n, k, destination) newest first, finished (finished_xid, n,
// k, destination) oldest first after a position, where n is a per-call
// row's id or a derived one's message pk and k ranks the kinds on a tie of
// n. k is chosen so that, after a derived row's position, the per-call
// statement's own keyset predicate (with n for the id) is still exact.

const nil = "00000000-0000-0000-0000-000000000000";

interface SortKey {
  n: bigint;
  /** Created order: per-call 1, derived 0; finish order: per-call 0, derived 1. */
  k: number;
  destination: string;
}

function keyOf(id: string, destinationId: string, order: "created" | "finished"): SortKey {
  const log = parseLogDeliveryId(id);
  const derivedK = order === "created" ? 0 : 1;
  return log ? { n: BigInt(log.messagePk), k: derivedK, destination: destinationId } : { n: BigInt(id), k: 1 - derivedK, destination: nil };
}

/** A timestamptz as Postgres prints it (ISO, any offset), in microseconds since the epoch: exact, unlike a Date. */
export function microsOf(text: string): bigint {
  const match = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?([+-]\d{2})(?::?(\d{2}))?$/.exec(text);
  if (!match) throw new Error(`not a timestamp: ${text}`);
  const [, day, time, fraction = "", hours, minutes = "00"] = match;
  const seconds = Date.parse(`${day}T${time}${hours}:${minutes}`) / 1000;
  return BigInt(seconds) * 1_000_000n + BigInt(fraction.padEnd(6, "0"));
}

function compareKeys(a: SortKey, b: SortKey): number {
  if (a.n !== b.n) return a.n < b.n ? -1 : 1;
  if (a.k !== b.k) return a.k - b.k;
  return a.destination < b.destination ? -1 : a.destination > b.destination ? 1 : 0;
}

/** Newest created first (the created order, descending). */
function createdDesc(a: SearchRow, b: SearchRow): number {
  const at = microsOf(b.cursor_at) - microsOf(a.cursor_at);
  if (at !== 0n) return at < 0n ? -1 : 1;
  return compareKeys(keyOf(b.id, b.destination_id, "created"), keyOf(a.id, a.destination_id, "created"));
}

/** Oldest finished first. */
function finishedAsc(a: SearchRow, b: SearchRow): number {
  const xid = BigInt(a.finished_xid!) - BigInt(b.finished_xid!);
  if (xid !== 0n) return xid < 0n ? -1 : 1;
  return compareKeys(keyOf(a.id, a.destination_id, "finished"), keyOf(b.id, b.destination_id, "finished"));
}

/** The destinations on the log a filter reaches (none: the per-call read alone). */
async function logDestinationsOf(db: Queryable, filter: DeliveryFilter): Promise<string[]> {
  if (
    filter.statuses &&
    filter.statuses.length > 0 &&
    !filter.statuses.some((s) => s === "delivered" || s === "pending" || s === "retrying")
  ) {
    return [];
  }
  const ids = await selectLogDestinationIds(db);
  return filter.destinationId === undefined ? ids : ids.filter((id) => id === filter.destinationId);
}

/** A filter's statuses as a test of the SQL status `status` (TRUE without any). */
function statusTest(filter: DeliveryFilter, params: Params, status: string): string {
  if (!filter.statuses || filter.statuses.length === 0) return "TRUE";
  return `${status} = ANY(${params.add(filter.statuses, "delivery_status[]")})`;
}

/** The predicates of a filter on the derived rows' message `m` (the destination and status are the caller's). */
function messagePredicates(filter: DeliveryFilter, params: Params): string[] {
  const where: string[] = [];
  if (filter.messageId !== undefined) where.push(`m.message_id = ${params.add(filter.messageId, "text")}`);
  if (filter.userId !== undefined) where.push(`m.user_id = ${params.add(filter.userId, "text")}`);
  if (filter.profileId !== undefined) where.push(`m.id IN (${profileCallsSql(params.add(filter.profileId, "uuid"))})`);
  if (filter.since) where.push(`m.received_at >= ${params.add(filter.since, "timestamptz")}`);
  if (filter.until) where.push(`m.received_at < ${params.add(filter.until, "timestamptz")}`);
  return where;
}

/** A keyset position's (n, k, destination) as parameters. */
function positionParams(id: string, order: "created" | "finished", params: Params): [n: string, k: string, destination: string] {
  const log = parseLogDeliveryId(id);
  const key = keyOf(id, log?.destinationId ?? nil, order);
  return [params.add(String(key.n), "bigint"), params.add(key.k, "int"), params.add(key.destination, "uuid")];
}

/**
 * Derived deliveries of the destinations `destinationIds`, newest created
 * first. By message (messageId, userId): the matching calls of every
 * source. Else each destination's sources on its log (a cursor or a batch),
 * each walked newest received first (messages_log_received_idx), at most
 * `limit` each.
 */
export function logSearchQuery(destinationIds: readonly string[], filter: DeliveryFilter, options: SearchOptions): Query {
  const params = new Params();
  const dsts = params.add(destinationIds, "uuid[]");
  const where = [...derivedPredicates("dst.id"), ...messagePredicates(filter, params)];
  // The status is computed: it is tested on the row (x).
  const status = statusTest(filter, params, "x.status");
  if (options.before) {
    const at = params.add(options.before.createdAt, "timestamptz");
    const [n, k, destination] = positionParams(options.before.id, "created", params);
    // The first for the index (source_id, received_at, id), the second exact.
    where.push(`(m.received_at, m.id) <= (${at}, ${n})`, `(m.received_at, m.id, 0, dst.id) < (${at}, ${n}, ${k}, ${destination})`);
  }
  const limit = params.add(options.limit, "int");
  const rows = (from: string, extra: string) => `SELECT * FROM (SELECT ${derivedColumns("dst.id")}, m.id AS pk
      FROM ${from} ${derivedJoins("dst.id")}
     WHERE ${and([...where, extra])}) x WHERE ${status}`;
  const byMessage = filter.messageId !== undefined || filter.userId !== undefined || filter.profileId !== undefined;
  const text = byMessage
    ? `${rows(`unnest(${dsts}) AS dst(id) JOIN messages m ON m.source_id IN (SELECT id FROM sources)`, "TRUE")}
       ORDER BY x.created_at DESC, x.pk DESC, x.destination_id DESC LIMIT ${limit}`
    : `SELECT x.* FROM unnest(${dsts}) AS dst(id)
       JOIN sources s ON EXISTS (SELECT 1 FROM log_cursors lc WHERE lc.destination_id = dst.id AND lc.source_id = s.id)
                      OR EXISTS (SELECT 1 FROM log_batches lb WHERE lb.destination_id = dst.id AND lb.source_id = s.id)
       CROSS JOIN LATERAL (${rows("messages m", "m.source_id = s.id")}
         ORDER BY x.created_at DESC, x.pk DESC LIMIT ${limit}) x
       ORDER BY x.created_at DESC, x.pk DESC, x.destination_id DESC LIMIT ${limit}`;
  return { text, values: params.values };
}

/** The per-call search's position after a derived row: its message pk for the id (exact, see the order above). */
function perCallOptions(options: SearchOptions): SearchOptions {
  const before = options.before;
  const log = before && parseLogDeliveryId(before.id);
  return log ? { ...options, before: { createdAt: before.createdAt, id: log.messagePk } } : options;
}

/** searchDeliveries with the derived deliveries of destinations on the log merged in (the single-node driver's). */
export async function searchDeliveriesAndLog(db: Queryable, filter: DeliveryFilter, options: SearchOptions): Promise<SearchRow[]> {
  const [perCall, destinations] = await Promise.all([searchDeliveries(db, filter, perCallOptions(options)), logDestinationsOf(db, filter)]);
  if (destinations.length === 0) return perCall;
  const query = logSearchQuery(destinations, filter, options);
  const derived = (await db.query<LogDeliveryRow>(query.text, query.values)).rows;
  return [...perCall, ...derived].sort(createdDesc).slice(0, options.limit);
}

/**
 * Delivered calls of the batches of `destinationIds` that a feed position
 * has not returned (or, without one, the newest): each destination's
 * batches in finishing order, at most `limit`, then their calls.
 */
export function logFeedQuery(
  destinationIds: readonly string[],
  filter: DeliveryFilter,
  position: FeedPosition | undefined,
  limit: number,
): Query {
  const params = new Params();
  const dsts = params.add(destinationIds, "uuid[]");
  const batches: string[] = ["lb.delivered > 0"];
  // Delivered calls only: another status filters them all out.
  const where = [...derivedPredicates("dst.id"), "b.finished_xid = lb.finished_xid", ...messagePredicates(filter, params)];
  where.push(statusTest(filter, params, "'delivered'::delivery_status"));
  if (position) {
    const seen = params.add(position.seen, "pg_snapshot");
    batches.push(`lb.finished_xid >= pg_snapshot_xmin(${seen})`, `NOT pg_visible_in_snapshot(lb.finished_xid, ${seen})`);
    if (position.upTo) batches.push(`pg_visible_in_snapshot(lb.finished_xid, ${params.add(position.upTo, "pg_snapshot")})`);
    if (position.after) {
      const xid = params.add(position.after.xid, "xid8");
      batches.push(`lb.finished_xid >= ${xid}`);
      where.push(`(lb.finished_xid, m.id, 1, dst.id) > (${xid}, ${positionParams(position.after.id, "finished", params).join(", ")})`);
    }
  }
  const direction = position ? "" : " DESC";
  const n = params.add(limit, "int");
  return {
    text: `SELECT ${derivedColumns("dst.id")} FROM unnest(${dsts}) AS dst(id)
     CROSS JOIN LATERAL (SELECT * FROM log_batches lb WHERE lb.destination_id = dst.id AND ${batches.join(" AND ")}
                          ORDER BY lb.finished_xid${direction} LIMIT ${n}) lb
     JOIN messages m ON m.source_id = lb.source_id AND ${heldByBatchSql("lb", "m")}
     ${derivedJoins("dst.id")}
     WHERE ${and(where)}
     ORDER BY lb.finished_xid${direction}, m.id${direction}, dst.id${direction} LIMIT ${n}`,
    values: params.values,
  };
}

/** readFinishFeed (delivery-search.ts) with the batches of destinations on the log: their delivered calls finish with them. */
export const readFinishFeedAndLog: typeof readFinishFeed = (pool, filter, position, limit, maxBytes = Infinity) =>
  inFeedSnapshot(pool, async (client, snapshot) => {
    const read = position ? limit + 1 : limit;
    const after = position?.after && parseLogDeliveryId(position.after.id);
    const perCallPosition = position && after ? { ...position, after: { xid: position.after!.xid, id: after.messagePk } } : position;
    const query = feedQuery(filter, perCallPosition, read);
    const found = (await client.query<SearchRow>(query.text, query.values)).rows;
    const destinations = await logDestinationsOf(client, filter);
    if (destinations.length > 0) {
      const log = logFeedQuery(destinations, filter, position, read);
      found.push(...(await client.query<LogDeliveryRow>(log.text, log.values)).rows);
      found.sort(position ? finishedAsc : (a, b) => finishedAsc(b, a));
      found.splice(read);
    }
    return feedPage(found, position, snapshot, { limit, maxBytes });
  });
