import type { Queryable } from "./store-messages.js";

export interface DestinationRow {
  id: string;
  name: string;
  enabled: boolean;
  webhooks: Array<{ url: string; headers: Record<string, string> }>;
  shared_secret: string | null;
  max_requests_per_second: number;
  ordering: "none" | "per_user";
  revision: number;
  created_at: Date;
  updated_at: Date;
  source_ids: string[];
  cursor_at: string;
}

const columns = `d.id, d.name, d.enabled, d.webhooks, d.shared_secret, d.max_requests_per_second, d.ordering, d.revision, d.created_at, d.updated_at,
  d.created_at::text AS cursor_at,
  coalesce((SELECT array_agg(ds.source_id ORDER BY ds.source_id) FROM destination_sources ds
             WHERE ds.destination_id = d.id), '{}') AS source_ids`;

export async function selectDestination(db: Queryable, id: string, forUpdate = false): Promise<DestinationRow | undefined> {
  const lock = forUpdate ? "FOR UPDATE OF d" : "";
  const result = await db.query<DestinationRow>(`SELECT ${columns} FROM destinations d WHERE d.id = $1 ${lock}`, [id]);
  return result.rows[0];
}

export async function listDestinationRows(
  db: Queryable,
  options: { sourceId?: string; after?: { createdAt: string; id: string }; limit: number },
): Promise<DestinationRow[]> {
  const result = await db.query<DestinationRow>(
    `SELECT ${columns} FROM destinations d
      WHERE ($1::timestamptz IS NULL OR (d.created_at, d.id) > ($1, $2::uuid))
        AND ($3::uuid IS NULL OR EXISTS (SELECT 1 FROM destination_sources ds
                                          WHERE ds.destination_id = d.id AND ds.source_id = $3))
      ORDER BY d.created_at, d.id LIMIT $4`,
    [options.after?.createdAt ?? null, options.after?.id ?? null, options.sourceId ?? null, options.limit],
  );
  return result.rows;
}

/** The ids of the given sources that do not exist. */
export async function missingSourceIds(db: Queryable, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const result = await db.query<{ id: string }>(
    "SELECT i.id FROM unnest($1::uuid[]) AS i(id) WHERE NOT EXISTS (SELECT 1 FROM sources s WHERE s.id = i.id)",
    [ids],
  );
  return result.rows.map((r) => r.id);
}

export async function replaceDestinationSources(db: Queryable, destinationId: string, sourceIds: readonly string[]): Promise<void> {
  await db.query("DELETE FROM destination_sources WHERE destination_id = $1", [destinationId]);
  if (sourceIds.length > 0) {
    await db.query(
      "INSERT INTO destination_sources (source_id, destination_id) SELECT unnest($1::uuid[]), $2",
      [sourceIds, destinationId],
    );
  }
}

/**
 * Cancels a destination's unfinished deliveries (it is being deleted). The
 * lease token moves on, so an attempt still in flight cannot overwrite it.
 */
export async function cancelPendingDeliveries(db: Queryable, destinationId: string, now: Date): Promise<number> {
  const result = await db.query(
    `UPDATE deliveries SET status = 'cancelled', finalized_at = $2, lease_owner = NULL, leased_until = NULL, lease_token = lease_token + 1
      WHERE destination_id = $1 AND status IN ('pending', 'retrying')`,
    [destinationId, now],
  );
  return result.rowCount ?? 0;
}
