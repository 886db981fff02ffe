import type { Queryable } from "../pool.js";
import { completionParameters } from "./completion-records.js";
import type { DeliveryCompletion } from "./delivery-completion.js";
import { fenceCondition, finishCtes, transitionSql } from "./fence.js";

const terminalSql = "('delivered', 'failed', 'expired', 'cancelled')";

// What a result changes on the delivery, whether it stays in the queue or
// moves to the history (SQL over the delivery `d` and the result `c`).
const resultColumns = {
  attempt_count: "d.attempt_count + CASE WHEN c.attempted THEN 1 ELSE 0 END",
  first_attempt_at: "CASE WHEN c.attempted THEN coalesce(d.first_attempt_at, c.attempted_at) ELSE d.first_attempt_at END",
  retry_urls: "CASE WHEN c.retry_urls IS NULL THEN NULL ELSE ARRAY(SELECT json_array_elements_text(c.retry_urls)) END",
  // The batch attempts this result made, referenced with the attempt's
  // number (appending a NULL array leaves the column as it was).
  batch_attempts: "d.batch_attempts || c.batch_refs",
  batch_attempt_numbers:
    "CASE WHEN c.batch_refs IS NULL THEN d.batch_attempt_numbers ELSE d.batch_attempt_numbers || array_fill(d.attempt_count + 1, ARRAY[cardinality(c.batch_refs)]) END",
};

// The lease holder's results, applied only while its token still holds: a
// delivery still to be retried (or released untouched) stays in the queue
// with its new state...
const fence = { kind: "held", token: "c.lease_token" } as const;
function retryTransition(destination: string | undefined): string {
  return transitionSql({
    fence,
    fenceCheckedOnLock: true,
    status: "c.status",
    set: ["run_at = c.run_at", ...Object.entries(resultColumns).map(([column, value]) => `${column} = ${value}`)].join(", "),
    from: "held c",
    where: `${scoped(destination)}d.destination_id = c.destination_id AND d.id = c.id AND c.status NOT IN ${terminalSql}`,
    returning: "d.destination_id, d.id, d.attempt_count",
  });
}

// ...and a finished one moves to the history.
function finishedCtes(destination: string | undefined): string {
  return finishCtes("finished", {
    fence,
    fenceCheckedOnLock: true,
    status: "c.status",
    finalizedAt: "c.finalized_at",
    set: resultColumns,
    using: "held c",
    where: `${scoped(destination)}d.destination_id = c.destination_id AND d.id = c.id AND c.status IN ${terminalSql}`,
  });
}

function scoped(destination: string | undefined): string {
  return destination === undefined ? "" : `d.destination_id = ${destination} AND `;
}

/**
 * The completion statement; given `destination` (an SQL expression, a
 * parameter), for results of that one destination only, every reference to
 * a table distributed by destination filtered to it (Citus then runs it on
 * that destination's shard). $1 the results, $2 the batch attempt rows.
 */
export function completeStatementSql(destination?: string): string {
  return `WITH c AS (
       SELECT r.destination_id, r.id, r.lease_token, r.status, ${fromEpochMs("r.run_at")} AS run_at, r.attempted,
              ${fromEpochMs("r.attempted_at")} AS attempted_at, r.retry_urls, ${fromEpochMs("r.finalized_at")} AS finalized_at, r.attempts,
              r.batch_refs
         FROM json_to_recordset($1::json)
           AS r(destination_id uuid, id bigint, lease_token int, status delivery_status, run_at bigint,
                attempted boolean, attempted_at bigint, retry_urls json, finalized_at bigint, attempts json, batch_refs uuid[])
     ), held AS (
       -- The results whose lease still holds, their rows locked: one
       -- primary-key probe each (a LATERAL subquery with LIMIT, which the
       -- planner cannot turn into a join over the queue).
       SELECT c.* FROM c
        CROSS JOIN LATERAL (
          SELECT 1 FROM delivery_queue l
           WHERE l.destination_id = ${destination ?? "c.destination_id"} AND l.id = c.id AND ${fenceCondition(fence, "l")}
           LIMIT 1 FOR UPDATE) q
     ), retried AS (
       ${retryTransition(destination)}
     ), ${finishedCtes(destination)}, done AS (
       SELECT destination_id, id, attempt_count FROM retried
       UNION ALL SELECT destination_id, id, attempt_count FROM finished
     ), logged AS (
       INSERT INTO delivery_attempts (destination_id, delivery_id, attempt, url_index, url, attempted_at, outcome,
                                      status_code, error, latency_ms, response_body, destination_revision, sent_body, discarded_values,
                                      subscription, method, request_headers, request_body, request_body_bytes)
       SELECT c.destination_id, c.id, done.attempt_count, a.url_index, a.url, ${fromEpochMs("a.attempted_at")}, a.outcome,
              a.status_code, a.error, a.latency_ms, a.response_body, a.destination_revision, a.sent_body, a.discarded_values,
              a.subscription, a.method, a.request_headers, a.request_body, a.request_body_bytes
         FROM c
         JOIN done ON done.destination_id = c.destination_id AND done.id = c.id
         CROSS JOIN LATERAL json_to_recordset(c.attempts)
           AS a(url_index int, url text, attempted_at bigint, outcome attempt_outcome, status_code int, error text,
                latency_ms int, response_body text, destination_revision int, sent_body text, discarded_values int,
                subscription text, method text, request_headers jsonb, request_body text, request_body_bytes int)
        WHERE c.attempts IS NOT NULL
       ON CONFLICT DO NOTHING
       RETURNING 1
     ), batched AS (
       -- Each batch attempt row once, counting the deliveries that reference
       -- it; calls of one operation completed by an earlier statement found
       -- it written and add theirs. In key order, so two statements adding
       -- to the same rows lock them in the same order.
       INSERT INTO delivery_batch_attempts (destination_id, id, batch_id, url_index, url, attempted_at, outcome, status_code, error,
                                            latency_ms, response_body, destination_revision, calls, deliveries, subscription, method,
                                            request_headers, request_body, request_body_bytes, delivery_ids)
       SELECT b.destination_id, b.id, b.batch_id, b.url_index, b.url, ${fromEpochMs("b.attempted_at")}, b.outcome, b.status_code, b.error,
              b.latency_ms, b.response_body, b.destination_revision, b.calls, n.deliveries, b.subscription, b.method,
              b.request_headers, b.request_body, b.request_body_bytes, n.delivery_ids
         FROM (SELECT c.destination_id, r.ref, count(*) AS deliveries, array_agg(c.id ORDER BY c.id) AS delivery_ids
                 FROM c
                 JOIN done ON done.destination_id = c.destination_id AND done.id = c.id
                CROSS JOIN LATERAL unnest(c.batch_refs) AS r(ref)
                WHERE c.batch_refs IS NOT NULL
                GROUP BY 1, 2) n
         JOIN json_to_recordset($2::json)
           AS b(destination_id uuid, id uuid, batch_id uuid, calls int, url_index int, url text, attempted_at bigint, outcome attempt_outcome,
                status_code int, error text, latency_ms int, response_body text, destination_revision int,
                subscription text, method text, request_headers jsonb, request_body text, request_body_bytes int)
           ON b.destination_id = n.destination_id AND b.id = n.ref
        ORDER BY b.destination_id, b.id
       ON CONFLICT (destination_id, id, attempted_at) DO UPDATE SET deliveries = delivery_batch_attempts.deliveries + excluded.deliveries,
         delivery_ids = delivery_batch_attempts.delivery_ids || excluded.delivery_ids
       RETURNING 1
     )
     SELECT id FROM done`;
}

const singleNodeCompletion = completeStatementSql();

/**
 * Writes a batch of completions in one statement: the deliveries' new state
 * (a finished delivery leaves the queue for the history) and, for those
 * whose lease still held, their attempts: a delivery_attempts row per
 * request of its own, and for an attempt that was part of a batch
 * operation (`AttemptResult.batch`) the operation's row in
 * delivery_batch_attempts, written once for all its calls, and a reference
 * to it on the delivery (with the attempt's number). A batch call that
 * carries something of its own to keep (a sentBody, discardedValues) gets
 * its own delivery_attempts row instead.
 * Returns the ids that were written. Every delivery result passes through
 * here (the completion writer batches them), so anything recorded per
 * result belongs in this statement.
 *
 * The batch travels as one JSON parameter (each completion with its
 * attempts nested, and its batch attempts as row ids), not as an array per
 * column: no per-element escaping or date formatting by pg, and one fixed
 * text whatever the batch's size. The batch attempt rows travel once each
 * in a second JSON parameter (completion-records.ts).
 */
export async function completeDeliveries(db: Queryable, completions: readonly DeliveryCompletion[]): Promise<Set<string>> {
  if (completions.length === 0) return new Set();
  const parameters = completionParameters(completions);
  const result = await db.query<{ id: string }>({
    // Planned for each batch, not prepared: see claimDeliveries.
    text: singleNodeCompletion,
    values: [parameters.records, parameters.batchRows],
  });
  return new Set(result.rows.map((r) => r.id));
}

/**
 * Times travel as epoch milliseconds (what a Date holds), turned back into
 * timestamptz in SQL: exact to the millisecond, and Date#toISOString, which
 * JSON.stringify calls for every Date, was most of the cost of this parameter.
 */
function fromEpochMs(column: string): string {
  return `to_timestamp(${column}::double precision / 1000)`;
}
