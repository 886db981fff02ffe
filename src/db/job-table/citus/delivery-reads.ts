import type { Queryable } from "../../pool.js";
import type { DeliveryRow, SearchOptions, SearchRow } from "../../queries/delivery-rows.js";
import { byMessage, and, Params, type DeliveryFilter } from "../filter.js";
import { citusFilterPredicates } from "./message-filter.js";

// On Citus a delivery (by destination) and its message (by id) are on
// different shards, and Citus joins them in one statement only by
// repartitioning: so the deliveries are read first, then their messages by
// id, then the bodies their last attempts sent, and the rows are put
// together here. Each statement reads one colocation group.

export type DeliveryPart = Omit<SearchRow, "message_id" | "type" | "payload" | "user_id" | "sent_body"> & { message_pk: string };

export const deliveryColumns = `d.id, d.destination_id, d.source_id, d.message_pk, d.status, d.attempt_count, d.created_at,
  coalesce(d.earliest_attempt_at, d.first_attempt_at) AS first_attempt_at, d.run_at, d.finalized_at,
  d.created_at::text AS cursor_at, d.finished_xid::text AS finished_xid`;

/** The rows with their messages and last sent bodies; a delivery whose message is gone is left out (as an inner join would). */
export async function withMessages<T extends DeliveryPart>(db: Queryable, parts: T[]): Promise<Array<Omit<T, "message_pk"> & DeliveryRow>> {
  if (parts.length === 0) return [];
  const [messages, bodies] = await Promise.all([
    db.query<{ id: string; message_id: string; type: string; payload: string; user_id: string | null }>(
      "SELECT id, message_id, type, payload, user_id FROM messages WHERE id = ANY($1::bigint[])",
      [[...new Set(parts.map((part) => part.message_pk))]],
    ),
    db.query<{ destination_id: string; delivery_id: string; sent_body: string | null }>(
      `SELECT DISTINCT ON (destination_id, delivery_id) destination_id, delivery_id, sent_body FROM delivery_attempts
        WHERE destination_id = ANY($1::uuid[]) AND delivery_id = ANY($2::bigint[])
        ORDER BY destination_id, delivery_id, attempt DESC, url_index`,
      [[...new Set(parts.map((part) => part.destination_id))], parts.map((part) => part.id)],
    ),
  ]);
  const byPk = new Map(messages.rows.map((row) => [row.id, row]));
  const sent = new Map(bodies.rows.map((row) => [`${row.destination_id}/${row.delivery_id}`, row.sent_body]));
  return parts.flatMap(({ message_pk, ...part }) => {
    const message = byPk.get(message_pk);
    if (!message) return [];
    return [
      {
        ...part,
        message_id: message.message_id,
        type: message.type,
        payload: message.payload,
        user_id: message.user_id,
        sent_body: sent.get(`${part.destination_id}/${part.id}`) ?? null,
      } as Omit<T, "message_pk"> & DeliveryRow,
    ];
  });
}

/**
 * searchDeliveries on Citus: newest created first. Without a destination
 * the statement runs on every shard, each returning its newest `limit`,
 * merged by Citus; deliveries of deleted destinations are left out, as in
 * the single-node per-destination walk.
 */
export async function searchDeliveriesOnCitus(db: Queryable, filter: DeliveryFilter, options: SearchOptions): Promise<SearchRow[]> {
  const params = new Params();
  const where = await citusFilterPredicates(db, filter, params);
  if (options.before) {
    where.push(
      `(d.created_at, d.id) < (${params.add(options.before.createdAt, "timestamptz")}, ${params.add(options.before.id, "bigint")})`,
    );
  }
  const live = filter.destinationId === undefined && !byMessage(filter) ? "JOIN destinations dst ON dst.id = d.destination_id" : "";
  const result = await db.query<DeliveryPart>(
    `SELECT ${deliveryColumns} FROM deliveries d ${live}
      WHERE ${and(where)}
      ORDER BY d.created_at DESC, d.id DESC LIMIT ${params.add(options.limit, "int")}`,
    params.values,
  );
  return withMessages(db, result.rows);
}

/** selectDelivery on Citus: the delivery (on whichever shard holds it), then its message. */
export async function selectDeliveryOnCitus(db: Queryable, id: string): Promise<DeliveryRow | undefined> {
  const result = await db.query<DeliveryPart>(`SELECT ${deliveryColumns} FROM deliveries d WHERE d.id = $1`, [id]);
  const [row] = await withMessages(db, result.rows);
  if (!row) return undefined;
  const { cursor_at: _cursor, finished_xid: _xid, ...delivery } = row;
  return delivery;
}
