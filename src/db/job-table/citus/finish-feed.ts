import type { SearchRow } from "../../queries/delivery-rows.js";
import { feedPage, feedPredicates, type readFinishFeed } from "../../queries/delivery-search.js";
import { and, Params } from "../filter.js";
import { settledFinishSnapshot } from "./finish-barrier.js";
import { deliveryColumns, withMessages, type DeliveryPart } from "./delivery-reads.js";
import { citusFilterPredicates } from "./message-filter.js";

/**
 * readFinishFeed on Citus: the same positions and the same answers
 * (finish-barrier.ts says why the coordinator's snapshots order finishes). Each
 * read is bounded by a settled snapshot (`upTo`), since the rows come from
 * the workers in statements of their own, not from the snapshot's
 * transaction; the deliveries are read first, then their messages.
 */
export const readFinishFeedOnCitus: typeof readFinishFeed = async (pool, filter, position, limit, maxBytes = Infinity) => {
  const snapshot = await settledFinishSnapshot(pool);
  const params = new Params();
  const where = await citusFilterPredicates(pool, filter, params);
  if (!position) {
    where.push("d.finished_xid IS NOT NULL", `pg_visible_in_snapshot(d.finished_xid, ${params.add(snapshot, "pg_snapshot")})`);
  } else {
    where.push(...feedPredicates({ ...position, upTo: position.upTo ?? snapshot }, params));
  }
  const order = position ? "d.finished_xid, d.id" : "d.finished_xid DESC, d.id DESC";
  const parts = await pool.query<DeliveryPart>(
    `SELECT ${deliveryColumns} FROM deliveries d WHERE ${and(where)} ORDER BY ${order} LIMIT ${params.add(position ? limit + 1 : limit, "int")}`,
    params.values,
  );
  const found: SearchRow[] = await withMessages(pool, parts.rows);
  return feedPage(found, position, snapshot, { limit, maxBytes }, parts.rows.length);
};
