import type { JsonObject } from "@bufbuild/protobuf";
import { NotFoundError } from "../../errors.js";
import type { Queryable } from "../pool.js";
import { enqueueCte, orderingKeySql } from "./enqueue.js";
import { filtersStampSql } from "../queries/source-filters.js";

/** Why a destination's rules held a call back at routing (the reason of its FILTERED fate). */
export type HeldBackReason = "filter" | "consent" | "subscriptions";

/** A message ready to store: validated, its body built. */
export interface MessageToStore {
  messageId: string;
  type: string;
  userId: string;
  /** With userId, what per-user ordering keys the delivery by (absent: none). */
  anonymousId?: string;
  /** The stored body: JSON text (as JSON.stringify gives it), kept byte for byte. */
  payload: string;
  /** The call's integrations object, which routing reads. */
  integrations: JsonObject | undefined;
  /**
   * Destinations whose rules held the call back, and why (destination id to
   * reason: its filter, its consent categories, or an integration's
   * subscriptions; absent: none).
   */
  filteredOut?: Readonly<Record<string, HeldBackReason>> | undefined;
  /** The W3C trace context sent on every webhook request for the call (absent: none). */
  traceparent?: string | undefined;
  tracestate?: string | undefined;
  /** When the client says it sent the call (absent: it did not say). */
  sentAt?: Date | undefined;
}

/** What storing a batch did. */
export interface StoreResult {
  /**
   * False when the filters the caller routed with are no longer the
   * source's (a destination changed since they were read): nothing was
   * stored; read them again and store again.
   */
  fresh: boolean;
  /** Calls held back by a destination's rules, per destination id and reason. */
  filtered: Array<[destinationId: string, reason: HeldBackReason, count: number]>;
  /** Whether any delivery was queued, or a destination on the call log has new calls: the caller wakes the delivery loops (see background/throttled-notify.ts). */
  queued: boolean;
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

// One JSON parameter (an array of row objects) instead of one array per
// column: pg escapes every element of a text[] parameter in JS, while this
// text is built with JSON.stringify and parsed once in Postgres. The payload
// is usually spliced in as it is (it is JSON text already) and read back as
// a `json` value, whose text Postgres keeps byte for byte: no second
// escaping. Postgres decodes \u escapes while it parses, and refuses some a
// text column may hold (\u0000, lone surrogates), so a payload with any \u
// goes as a JSON string instead (`s`), escaped once more.
const storeStatement = `
  WITH input AS (
    SELECT * FROM ROWS FROM (json_to_recordset($3::json) AS (m text, t text, u text, a text, g jsonb, x jsonb, p json, s text, tp text, ts text, sa timestamptz))
      WITH ORDINALITY AS i(message_id, type, user_id, anonymous_id, integrations, filtered_out, raw_payload, escaped_payload, traceparent, tracestate, sent_at, position)
  ), fresh AS (
    -- The source's row, locked once per statement (no foreign key checks
    -- each message): a deletion of the source waits for this store, then
    -- deletes what it stored; a store after the deletion finds no source.
    SELECT ${filtersStampSql("$1")} = $4::jsonb AS ok,
           EXISTS (SELECT 1 FROM sources WHERE id = $1 FOR KEY SHARE) AS found
  ), inserted AS (
    INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload, traceparent, tracestate, sent_at)
    SELECT $1, message_id, type, nullif(user_id, ''), $2, coalesce(escaped_payload, raw_payload::text), traceparent, tracestate, sent_at FROM input
     WHERE (SELECT ok AND found FROM fresh)
    ON CONFLICT (source_id, message_id) DO NOTHING
    RETURNING id, message_id
  ), targets AS (
    SELECT d.id, d.name, d.enabled, d.ordering = 'per_user' AS ordered FROM destination_sources ds JOIN destinations d ON d.id = ds.destination_id
     WHERE ds.source_id = $1
       -- A destination on the call log reads the calls by its cursor: no queue row, no fate (db/call-log/).
       AND d.delivery_layout = 'per_call'
    -- A user key only where the destination orders (turning ordering on
    -- gives the queued deliveries theirs), so the ordering index holds only
    -- those destinations' backlog.
  ), ${enqueueCte(`SELECT t.id, m.id, $1, $2, $2, CASE WHEN t.ordered THEN ${orderingKeySql("i.user_id", "i.anonymous_id")} END
       FROM inserted m JOIN input i USING (message_id)
       JOIN targets t ON t.enabled AND ${routingCondition("i.integrations", "t.name")}
                     AND NOT coalesce(i.filtered_out ? t.id::text, false)
      -- Delivery ids follow the calls' order in the batch (per-user ordering's acceptance order).
      ORDER BY i.position`)}, fated AS (
    -- Why the other connected destinations got no delivery, as it was decided now.
    INSERT INTO call_fates (message_pk, destination_id, fate, reason, recorded_at)
    SELECT m.id, t.id, f.fate, CASE WHEN f.fate = 'filtered' THEN i.filtered_out ->> t.id::text END, $2
      FROM inserted m JOIN input i USING (message_id) JOIN targets t ON true
     CROSS JOIN LATERAL (SELECT CASE WHEN NOT t.enabled THEN 'disabled'
                                     WHEN NOT ${routingCondition("i.integrations", "t.name")} THEN 'integrations_off'
                                     WHEN coalesce(i.filtered_out ? t.id::text, false) THEN 'filtered' END AS fate) f
     WHERE f.fate IS NOT NULL
    RETURNING destination_id, fate, reason
  )
  -- A destination on the call log has new calls to read: its loader is woken as the per-call loop is.
  SELECT EXISTS (SELECT 1 FROM queued)
         OR (EXISTS (SELECT 1 FROM inserted) AND EXISTS (
               SELECT 1 FROM destination_sources ds JOIN destinations d ON d.id = ds.destination_id
                WHERE ds.source_id = $1 AND d.enabled AND d.delivery_layout = 'log')) AS queued, (SELECT ok FROM fresh) AS fresh, (SELECT found FROM fresh) AS found,
         (SELECT json_agg(json_build_array(destination_id, reason, n)) FROM
            (SELECT destination_id, reason, count(*)::int AS n FROM fated WHERE fate = 'filtered' GROUP BY destination_id, reason) f) AS filtered`;

/** The rows as one JSON array; absent fields are left out (SQL NULL). */
function rowsParameter(messages: readonly MessageToStore[]): string {
  const rows = messages.map((message) =>
    rowWithPayload(
      {
        m: message.messageId,
        t: message.type,
        u: message.userId,
        a: message.anonymousId,
        g: message.integrations,
        x: message.filteredOut,
        tp: message.traceparent,
        ts: message.tracestate,
        sa: message.sentAt,
      },
      message.payload,
    ),
  );
  return `[${rows.join(",")}]`;
}

/**
 * A JSON row object of `fields` (absent ones left out: SQL NULL) with the
 * payload spliced in as it is (`p`), or as a JSON string (`s`) when it has
 * \u escapes Postgres would decode (see the statement above).
 */
export function rowWithPayload(fields: Record<string, unknown>, payload: string): string {
  const json = JSON.stringify(fields);
  const spliced = payload.includes("\\u") ? `"s":${JSON.stringify(payload)}` : `"p":${payload}`;
  return `${json.slice(0, -1)},${spliced}}`;
}

/**
 * Stores messages and routes them to the source's enabled destinations in
 * one statement, so atomically and in one round trip, skipping messageIds
 * the source already has (a repeat is acknowledged, not stored again). It
 * does not NOTIFY: the caller wakes the delivery loops after it commits
 * (a throttled NOTIFY, background/throttled-notify.ts), as a NOTIFY here would serialize every ingest commit
 * on Postgres's one notification lock. A destination that is disabled, that the call's
 * integrations turn off, or whose rules held the call back (the caller
 * says which and why, and `filtersStamp` which rules it used) gets a fate row
 * instead of a delivery. Callers pass unique messageIds.
 */
export async function storeMessages(
  db: Queryable,
  sourceId: string,
  receivedAt: Date,
  messages: readonly MessageToStore[],
  filtersStamp = "{}",
): Promise<StoreResult> {
  if (messages.length === 0) return { fresh: true, filtered: [], queued: false };
  // Prepared (named): parsed and planned once per connection, not per Batch.
  const result = await db.query<{
    fresh: boolean;
    found: boolean;
    filtered: Array<[string, HeldBackReason, number]> | null;
    queued: boolean;
  }>({
    name: "waypost-store-messages",
    text: storeStatement,
    values: [sourceId, receivedAt, rowsParameter(messages), filtersStamp],
  });
  const row = result.rows[0]!;
  // Deleted since the caller found it (a write key is cached for seconds).
  if (!row.found) throw new NotFoundError("source", sourceId);
  return { fresh: row.fresh, filtered: row.filtered ?? [], queued: row.queued };
}
