import type pg from "pg";
import { and, byMessage, filterPredicates, Params, type DeliveryFilter, type Query } from "../job-table/filter.js";
import type { Queryable } from "../pool.js";
import type { SearchOptions, SearchRow } from "./delivery-rows.js";

const columns = `d.id, d.destination_id, d.source_id, m.message_id, m.type, d.status, d.attempt_count,
  d.created_at, coalesce(d.earliest_attempt_at, d.first_attempt_at) AS first_attempt_at, d.run_at, d.finalized_at, m.payload, m.user_id,
  (SELECT a.sent_body FROM delivery_attempts a WHERE a.destination_id = d.destination_id AND a.delivery_id = d.id
    ORDER BY a.attempt DESC, a.url_index LIMIT 1) AS sent_body,
  d.created_at::text AS cursor_at, d.finished_xid::text AS finished_xid`;

/**
 * Runs `inner` (a query over deliveries `d` ending in ORDER BY ... LIMIT)
 * either directly or once per destination, merged. Without a destination or
 * message to narrow by, the per-destination form walks each destination's
 * index for at most `limit` rows, instead of sorting the whole table.
 * Deliveries of deleted destinations are then left out.
 */
function search(filter: DeliveryFilter, params: Params, extra: string[], order: string, limit: number): string {
  const direct = filter.destinationId !== undefined || byMessage(filter);
  const limitParam = params.add(limit, "int");
  if (direct) {
    return `SELECT ${columns} FROM deliveries d JOIN messages m ON m.id = d.message_pk
             WHERE ${and([...filterPredicates(filter, params), ...extra])}
             ORDER BY ${order} LIMIT ${limitParam}`;
  }
  return `SELECT ${columns} FROM destinations dst
           CROSS JOIN LATERAL (
             SELECT d.* FROM deliveries d
              WHERE ${and(["d.destination_id = dst.id", ...filterPredicates(filter, params), ...extra])}
              ORDER BY ${order} LIMIT ${limitParam}) d
           JOIN messages m ON m.id = d.message_pk
           ORDER BY ${order} LIMIT ${limitParam}`;
}

/** The search as SQL (exported so that tests can EXPLAIN exactly what runs). */
export function searchQuery(filter: DeliveryFilter, options: SearchOptions): Query {
  const params = new Params();
  const extra: string[] = [];
  if (options.before) {
    extra.push(
      `(d.created_at, d.id) < (${params.add(options.before.createdAt, "timestamptz")}, ${params.add(options.before.id, "bigint")})`,
    );
  }
  return { text: search(filter, params, extra, "d.created_at DESC, d.id DESC", options.limit), values: params.values };
}

/** Newest created first. */
export async function searchDeliveries(db: Queryable, filter: DeliveryFilter, options: SearchOptions): Promise<SearchRow[]> {
  const query = searchQuery(filter, options);
  return (await db.query<SearchRow>(query.text, query.values)).rows;
}

/** The finish feed's read as SQL: newest first without a position, oldest first after one. */
export function feedQuery(filter: DeliveryFilter, position: FeedPosition | undefined, limit: number): Query {
  const params = new Params();
  if (!position) {
    return {
      text: search(filter, params, ["d.finished_xid IS NOT NULL"], "d.finished_xid DESC, d.id DESC", limit),
      values: params.values,
    };
  }
  return { text: search(filter, params, feedPredicates(position, params), "d.finished_xid, d.id", limit), values: params.values };
}

/** The deliveries `d` a feed position has not returned yet: finished after `seen`, up to `upTo`, past `after`. */
export function feedPredicates(position: FeedPosition, params: Params): string[] {
  const seen = params.add(position.seen, "pg_snapshot");
  const extra = [`d.finished_xid >= pg_snapshot_xmin(${seen})`, `NOT pg_visible_in_snapshot(d.finished_xid, ${seen})`];
  if (position.upTo) extra.push(`pg_visible_in_snapshot(d.finished_xid, ${params.add(position.upTo, "pg_snapshot")})`);
  if (position.after) {
    extra.push(`(d.finished_xid, d.id) > (${params.add(position.after.xid, "xid8")}, ${params.add(position.after.id, "bigint")})`);
  }
  return extra;
}

/** The position after a page of `read` rows (up to `limit + 1` read) of which `rows` are returned. */
function nextFeedPosition(position: FeedPosition, snapshot: string, read: number, rows: readonly SearchRow[]): FeedPosition {
  const last = rows[rows.length - 1];
  if (read > rows.length && last) {
    return { seen: position.seen, upTo: position.upTo ?? snapshot, after: { xid: last.finished_xid!, id: last.id } };
  }
  // The burst is done: what committed after `upTo` comes with the next read.
  return { seen: position.upTo ?? snapshot };
}

/**
 * Where a finish-feed reader is. `seen` is the snapshot of its previous
 * read: everything that finished in a transaction visible in it was
 * returned then. While a burst larger than one page is being paged through,
 * `upTo` is the snapshot that bounds the burst and `after` the last row
 * returned.
 */
export interface FeedPosition {
  seen: string;
  upTo?: string | undefined;
  after?: { xid: string; id: string } | undefined;
}

/**
 * The page a feed read makes of the rows it `found` (newest first without a
 * position; oldest first after one, `limit + 1` read so that the extra one
 * says the burst goes on). `read` is how many rows the statement returned,
 * when some were then left out (a delivery whose message is gone).
 */
export function feedPage(
  found: SearchRow[],
  position: FeedPosition | undefined,
  snapshot: string,
  limits: { limit: number; maxBytes: number },
  read = found.length,
): FeedPage {
  // The newest that fit: a first read shows the latest, not a history to page through.
  if (!position) return { rows: found.slice(0, rowsWithinBytes(found, limits.maxBytes)), next: { seen: snapshot } };
  const rows = found.slice(0, Math.min(limits.limit, rowsWithinBytes(found.slice(0, limits.limit), limits.maxBytes)));
  const next = nextFeedPosition(position, snapshot, read, rows);
  // Newest first, as every page of ListDeliveries (the position was taken from the oldest-first order).
  return { rows: rows.reverse(), next };
}

/**
 * How many of `rows`, from the first, fit in `maxBytes` of bodies (at
 * least one, so that a page always moves on). Bodies are most of what a
 * page of deliveries holds in memory (up to 32 KB each), so they bound it.
 */
export function rowsWithinBytes(rows: readonly { payload: string }[], maxBytes: number): number {
  let total = 0;
  for (let i = 0; i < rows.length; i++) {
    total += Buffer.byteLength(rows[i]!.payload);
    if (total > maxBytes && i > 0) return i;
  }
  return rows.length;
}

export interface FeedPage {
  /** Newest finished first. */
  rows: SearchRow[];
  next: FeedPosition;
}

/**
 * The finish feed: without a position, the `limit` most recently finished
 * deliveries; with one, exactly the deliveries that finished (committed)
 * since, oldest `limit` first if there are more, each once. Finishes are
 * ordered by the id of the transaction that finished them; visibility in
 * the reader's last snapshot, not a clock, decides what is new, so a
 * transaction that commits late is still seen.
 */
export async function readFinishFeed(
  pool: pg.Pool,
  filter: DeliveryFilter,
  position: FeedPosition | undefined,
  limit: number,
  maxBytes = Infinity,
): Promise<FeedPage> {
  return inFeedSnapshot(pool, async (client, snapshot) => {
    const query = feedQuery(filter, position, position ? limit + 1 : limit);
    const found = (await client.query<SearchRow>(query.text, query.values)).rows;
    return feedPage(found, position, snapshot, { limit, maxBytes });
  });
}

/**
 * Runs a feed read in one snapshot for all its statements (the rows, and
 * the snapshot the next read starts from, as Postgres prints it).
 */
export async function inFeedSnapshot<T>(pool: pg.Pool, read: (client: pg.PoolClient, snapshot: string) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    const snapshot = (await client.query<{ s: string }>("SELECT pg_current_snapshot()::text AS s")).rows[0]!.s;
    const result = await read(client, snapshot);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
