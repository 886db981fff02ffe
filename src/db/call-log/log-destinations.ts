import type { Queryable } from "../pool.js";
import { routingColumnsSql } from "../queries/destinations.js";
import type { SourceFilterRow } from "../queries/source-filters.js";

/**
 * The destinations whose kind takes calls in batches (docs/job-table.md,
 * "The call log"): a warehouse, a broker, and a webhook whose every URL
 * batches. Integrations stay per call: their parts (one per subscription)
 * decide a call together, which a batch range cannot say yet.
 */
export const batchingKindSql = `(d.kind IN ('postgres', 'amqp', 'nats', 'lake')
  OR (d.kind = 'webhook' AND jsonb_array_length(d.webhooks) > 0
      AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(d.webhooks) w WHERE jsonb_typeof(w -> 'batch') IS DISTINCT FROM 'object')))`;

/** Destinations still per call whose kind batches: the ones the process moves onto the log. */
export async function selectDestinationsToMove(db: Queryable): Promise<string[]> {
  const result = await db.query<{ id: string }>(
    `SELECT d.id FROM destinations d WHERE d.delivery_layout = 'per_call' AND ${batchingKindSql} ORDER BY d.id`,
  );
  return result.rows.map((row) => row.id);
}

/** A destination's routing rules, as ingest reads them for a destination per call (src/routing/route-rules.ts compiles them). */
export async function selectLogRoute(db: Queryable, destinationId: string): Promise<SourceFilterRow | undefined> {
  const result = await db.query<SourceFilterRow>({
    name: "waypost-select-log-route",
    text: `SELECT d.id, d.revision, d.filter, d.consent_categories, d.require_consent, d.kind${routingColumnsSql("d")}
             FROM destinations d WHERE d.id = $1`,
    values: [destinationId],
  });
  return result.rows[0];
}

/**
 * Of these users, the ones with a delivery still queued at the destination
 * (per-user ordering): their later calls wait behind it, as exceptions.
 */
export async function selectWaitingUsers(db: Queryable, destinationId: string, keys: readonly string[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const result = await db.query<{ ordering_key: string }>({
    name: "waypost-select-waiting-users",
    text: `SELECT DISTINCT ordering_key FROM delivery_queue WHERE destination_id = $1 AND ordering_key = ANY($2::text[])`,
    values: [destinationId, keys],
  });
  return new Set(result.rows.map((row) => row.ordering_key));
}
