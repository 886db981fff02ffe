import type { JsonObject } from "@bufbuild/protobuf";
import type { Queryable } from "../pool.js";
import { enqueueCte, notifyIfQueued, orderingKeySql } from "../job-table/index.js";

/** A message ready to store: validated, its body built. */
export interface MessageToStore {
  messageId: string;
  type: string;
  userId: string;
  /** With userId, what per-user ordering keys the delivery by (absent: none). */
  anonymousId?: string;
  payload: string;
  /** The call's integrations object, which routing reads. */
  integrations: JsonObject | undefined;
}

/** The name a call's integrations object uses for every webhook destination. */
export const webhooksIntegrationName = "Webhooks";

/**
 * Whether a call goes to a destination (see docs/webhooks.md#routing-which-destinations-get-a-call), as SQL over the
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
  ), ${enqueueCte(`SELECT t.id, m.id, $1, $2, $2, ${orderingKeySql("i.user_id", "i.anonymous_id")}
       FROM inserted m JOIN input i USING (message_id) JOIN targets t ON ${routingCondition("i.integrations", "t.name")}
      -- Delivery ids follow the calls' order in the batch (per-user ordering's acceptance order).
      ORDER BY i.position`)}
  SELECT ${notifyIfQueued()}`;

/**
 * Stores messages and routes them to the source's enabled destinations in
 * one statement, so atomically and in one round trip, skipping messageIds
 * the source already has (a repeat is acknowledged, not stored again), and
 * wakes the delivery loops. Callers pass unique messageIds.
 */
export async function storeMessages(
  db: Queryable,
  sourceId: string,
  receivedAt: Date,
  messages: readonly MessageToStore[],
): Promise<void> {
  if (messages.length === 0) return;
  await db.query(storeStatement, [
    sourceId,
    receivedAt,
    messages.map((m) => m.messageId),
    messages.map((m) => m.type),
    messages.map((m) => m.userId),
    messages.map((m) => m.payload),
    messages.map((m) => (m.integrations ? JSON.stringify(m.integrations) : null)),
    messages.map((m) => m.anonymousId ?? null),
  ]);
}
