import type { JsonObject } from "@bufbuild/protobuf";
import type pg from "pg";

/** A message ready to store: validated, its body built. */
export interface MessageToStore {
  messageId: string;
  type: string;
  userId: string;
  /** With userId, what per-user ordering keys the delivery by. */
  anonymousId: string;
  payload: string;
  /** The call's integrations object, which routing reads. */
  integrations: JsonObject | undefined;
}

export type Queryable = Pick<pg.Pool, "query"> | pg.PoolClient;

export const deliveriesChannel = "waypost_deliveries";

/** The name a call's integrations object uses for every webhook destination. */
export const webhooksIntegrationName = "Webhooks";

/**
 * Whether a call goes to a destination (SPEC section 3), as SQL over the
 * call's integrations (jsonb, NULL when absent) and the destination's name.
 * The most specific key present decides: the destination's own name, then
 * "Webhooks", then "All"; with none of them it is delivered. Keys are case
 * sensitive; any value but false (an options object, say) counts as on.
 */
export function routingCondition(integrations: string, destinationName: string): string {
  const on = (key: string) => `${integrations} -> ${key} IS DISTINCT FROM 'false'::jsonb`;
  return `CASE
    WHEN ${integrations} IS NULL THEN true
    WHEN ${integrations} ? ${destinationName} THEN ${on(destinationName)}
    WHEN ${integrations} ? '${webhooksIntegrationName}' THEN ${on(`'${webhooksIntegrationName}'`)}
    WHEN ${integrations} ? 'All' THEN ${on("'All'")}
    ELSE true END`;
}

/**
 * The user key a delivery is ordered by, as SQL: the userId, else the
 * anonymousId; NULL (not ordered) when the call has neither.
 */
export function orderingKeySql(userId: string, anonymousId: string): string {
  return `coalesce(nullif(${userId}, ''), nullif(${anonymousId}, ''))`;
}

const storeStatement = `
  WITH input AS (
    SELECT * FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::jsonb[], $8::text[])
      WITH ORDINALITY AS i(message_id, type, user_id, payload, integrations, anonymous_id, position)
  ), inserted AS (
    INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
    SELECT $1, message_id, type, nullif(user_id, ''), $2, payload FROM input
    ON CONFLICT (source_id, message_id) DO NOTHING
    RETURNING id, message_id
  ), targets AS (
    SELECT d.id, d.name FROM destination_sources ds JOIN destinations d ON d.id = ds.destination_id
     WHERE ds.source_id = $1 AND d.enabled
  ), queued AS (
    INSERT INTO deliveries (destination_id, message_pk, source_id, run_at, created_at, ordering_key)
    SELECT t.id, m.id, $1, $2, $2, ${orderingKeySql("i.user_id", "i.anonymous_id")}
      FROM inserted m JOIN input i USING (message_id) JOIN targets t ON ${routingCondition("i.integrations", "t.name")}
     -- Identity values are drawn in this order: delivery ids follow the
     -- calls' order in the batch, which per-user ordering relies on.
     ORDER BY i.position
    RETURNING 1
  )
  SELECT (SELECT array_agg(message_id) FROM inserted) AS stored,
         CASE WHEN EXISTS (SELECT 1 FROM queued) THEN pg_notify('${deliveriesChannel}', '') END AS notified`;

/**
 * Stores messages and routes them to the source's enabled destinations in
 * one statement, so atomically and in one round trip, skipping messageIds
 * the source already has, and wakes the delivery loops. Returns the
 * messageIds that were new. Callers pass unique messageIds.
 */
export async function storeMessages(
  db: Queryable,
  sourceId: string,
  receivedAt: Date,
  messages: readonly MessageToStore[],
): Promise<Set<string>> {
  if (messages.length === 0) return new Set();
  const result = await db.query<{ stored: string[] | null }>(storeStatement, [
    sourceId,
    receivedAt,
    messages.map((m) => m.messageId),
    messages.map((m) => m.type),
    messages.map((m) => m.userId),
    messages.map((m) => m.payload),
    messages.map((m) => (m.integrations ? JSON.stringify(m.integrations) : null)),
    messages.map((m) => m.anonymousId),
  ]);
  return new Set(result.rows[0]?.stored ?? []);
}
