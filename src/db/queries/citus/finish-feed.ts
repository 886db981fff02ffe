import type pg from "pg";
import { and, filterPredicates, Params, settledFinishSnapshot, type DeliveryFilter } from "../../job-table/index.js";
import type { SearchRow } from "../delivery-rows.js";
import { feedPredicates, nextFeedPosition, rowsWithinBytes, type FeedPage, type FeedPosition } from "../delivery-search.js";
import { deliveryColumns, messagesOfFilter, withMessages, type DeliveryPart } from "./delivery-reads.js";

/**
 * readFinishFeed on Citus: the same positions and the same answers
 * (finish-barrier.ts says why the coordinator's snapshots order finishes). Each
 * read is bounded by a settled snapshot (`upTo`), since the rows come from
 * the workers in statements of their own, not from the snapshot's
 * transaction; the deliveries are read first, then their messages.
 */
export async function readFinishFeedOnCitus(
  pool: pg.Pool,
  filter: DeliveryFilter,
  position: FeedPosition | undefined,
  limit: number,
  maxBytes = Infinity,
): Promise<FeedPage> {
  const snapshot = await settledFinishSnapshot(pool);
  const messagePks = await messagesOfFilter(pool, filter);
  if (messagePks?.length === 0) return { rows: [], next: position?.upTo ? { seen: position.upTo } : { seen: snapshot } };
  const params = new Params();
  const where = filterPredicates({ ...filter, messageId: undefined, userId: undefined }, params);
  if (messagePks) where.push(`d.message_pk = ANY(${params.add(messagePks, "bigint[]")})`);
  const bound = { seen: position?.seen ?? snapshot, upTo: position?.upTo ?? snapshot, after: position?.after };
  if (!position) {
    where.push("d.finished_xid IS NOT NULL", `pg_visible_in_snapshot(d.finished_xid, ${params.add(snapshot, "pg_snapshot")})`);
  } else {
    where.push(...feedPredicates(bound, params));
  }
  const order = position ? "d.finished_xid, d.id" : "d.finished_xid DESC, d.id DESC";
  const read = position ? limit + 1 : limit;
  const parts = await pool.query<DeliveryPart>(
    `SELECT ${deliveryColumns} FROM deliveries d WHERE ${and(where)} ORDER BY ${order} LIMIT ${params.add(read, "int")}`,
    params.values,
  );
  const found: SearchRow[] = await withMessages(pool, parts.rows);
  if (!position) return { rows: found.slice(0, rowsWithinBytes(found, maxBytes)), next: { seen: snapshot } };
  const fit = Math.min(limit, rowsWithinBytes(found.slice(0, limit), maxBytes));
  const rows = found.slice(0, fit);
  const next = nextFeedPosition({ ...position, upTo: bound.upTo }, snapshot, parts.rows.length, rows);
  // Newest first, as every page of ListDeliveries (the position was taken from the oldest-first order).
  return { rows: rows.reverse(), next };
}
