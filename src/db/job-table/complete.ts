import type { AttemptResult, BatchAttemptRef } from "./attempt-result.js";
import type { Queryable } from "../pool.js";
import { fenceCondition, finishCtes, transitionSql } from "./fence.js";

export type DeliveryStatus = "pending" | "retrying" | "delivered" | "failed" | "expired" | "cancelled";

/** What one processed delivery turned into. */
export interface DeliveryCompletion {
  destinationId: string;
  id: string;
  /** The claim's token: a completion from a lost lease changes nothing. */
  leaseToken: number;
  status: DeliveryStatus;
  /** Next attempt, for retrying; otherwise ignored. */
  runAt: Date;
  /** True when an attempt was made (false: released untouched). */
  attempted: boolean;
  attemptedAt: Date;
  retryUrls: string[] | null;
  attempts: AttemptResult[];
  /** The delivery was claimed as an open circuit's probe (endpoint health reads it). */
  probe?: boolean;
}

const terminal = new Set<DeliveryStatus>(["delivered", "failed", "expired", "cancelled"]);
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

// The columns of a batch attempt in the parameter, and the id of the row it
// is written to: one row per operation (batch id and URL) and result
// (outcome and error), so the calls of a plain batch share one row and a
// per-item failure gets a row of its own, whichever flush writes them.
const batchColumns = `b(batch_id uuid, calls int, url_index int, url text, attempted_at bigint, outcome attempt_outcome, status_code int,
                error text, latency_ms int, response_body text, destination_revision int)`;
const batchRowId = "md5(b.batch_id::text || '/' || b.url_index || '/' || b.outcome || '/' || coalesce('e' || b.error, 'n'))::uuid";

// The lease holder's results, applied only while its token still holds: a
// delivery still to be retried (or released untouched) stays in the queue
// with its new state...
const fence = { kind: "held", token: "c.lease_token" } as const;
const retryTransition = transitionSql({
  fence,
  fenceCheckedOnLock: true,
  status: "c.status",
  set: ["run_at = c.run_at", ...Object.entries(resultColumns).map(([column, value]) => `${column} = ${value}`)].join(", "),
  from: "held c",
  where: `d.destination_id = c.destination_id AND d.id = c.id AND c.status NOT IN ${terminalSql}`,
  returning: "d.destination_id, d.id, d.attempt_count",
});

// ...and a finished one moves to the history.
const finishedCtes = finishCtes("finished", {
  fence,
  fenceCheckedOnLock: true,
  status: "c.status",
  finalizedAt: "c.finalized_at",
  set: resultColumns,
  using: "held c",
  where: `d.destination_id = c.destination_id AND d.id = c.id AND c.status IN ${terminalSql}`,
});

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
 * attempts nested), not as an array per column: no per-element escaping or
 * date formatting by pg, and one fixed text whatever the batch's size.
 */
export async function completeDeliveries(db: Queryable, completions: readonly DeliveryCompletion[]): Promise<Set<string>> {
  if (completions.length === 0) return new Set();
  const result = await db.query<{ id: string }>({
    // Planned for each batch, not prepared: see claimDeliveries.
    text: `WITH c AS (
       SELECT r.destination_id, r.id, r.lease_token, r.status, ${fromEpochMs("r.run_at")} AS run_at, r.attempted,
              ${fromEpochMs("r.attempted_at")} AS attempted_at, r.retry_urls, ${fromEpochMs("r.finalized_at")} AS finalized_at, r.attempts,
              r.batches, CASE WHEN r.batches IS NULL THEN NULL
                         ELSE ARRAY(SELECT ${batchRowId} FROM json_to_recordset(r.batches) AS ${batchColumns}) END AS batch_refs
         FROM json_to_recordset($1::json)
           AS r(destination_id uuid, id bigint, lease_token int, status delivery_status, run_at bigint,
                attempted boolean, attempted_at bigint, retry_urls json, finalized_at bigint, attempts json, batches json)
     ), held AS (
       -- The results whose lease still holds, their rows locked: one
       -- primary-key probe each (a LATERAL subquery with LIMIT, which the
       -- planner cannot turn into a join over the queue).
       SELECT c.* FROM c
        CROSS JOIN LATERAL (
          SELECT 1 FROM delivery_queue l
           WHERE l.destination_id = c.destination_id AND l.id = c.id AND ${fenceCondition(fence, "l")}
           LIMIT 1 FOR UPDATE) q
     ), retried AS (
       ${retryTransition}
     ), ${finishedCtes}, done AS (
       SELECT destination_id, id, attempt_count FROM retried
       UNION ALL SELECT destination_id, id, attempt_count FROM finished
     ), logged AS (
       INSERT INTO delivery_attempts (destination_id, delivery_id, attempt, url_index, url, attempted_at, outcome,
                                      status_code, error, latency_ms, response_body, destination_revision, sent_body, discarded_values)
       SELECT c.destination_id, c.id, done.attempt_count, a.url_index, a.url, ${fromEpochMs("a.attempted_at")}, a.outcome,
              a.status_code, a.error, a.latency_ms, a.response_body, a.destination_revision, a.sent_body, a.discarded_values
         FROM c
         JOIN done ON done.destination_id = c.destination_id AND done.id = c.id
         CROSS JOIN LATERAL json_to_recordset(c.attempts)
           AS a(url_index int, url text, attempted_at bigint, outcome attempt_outcome, status_code int, error text,
                latency_ms int, response_body text, destination_revision int, sent_body text, discarded_values int)
       ON CONFLICT DO NOTHING
       RETURNING 1
     ), batched AS (
       -- Each batch attempt row once, counting the deliveries that reference
       -- it; calls of one operation completed by an earlier statement found
       -- it written and add theirs. In key order, so two statements adding
       -- to the same rows lock them in the same order.
       INSERT INTO delivery_batch_attempts (destination_id, id, batch_id, url_index, url, attempted_at, outcome, status_code, error,
                                            latency_ms, response_body, destination_revision, calls, deliveries)
       SELECT DISTINCT ON (x.destination_id, x.row_id, x.attempted_at)
              x.destination_id, x.row_id, x.batch_id, x.url_index, x.url, x.attempted_at, x.outcome, x.status_code, x.error,
              x.latency_ms, x.response_body, x.destination_revision, x.calls,
              count(*) OVER (PARTITION BY x.destination_id, x.row_id, x.attempted_at)
         FROM (SELECT c.destination_id, ${batchRowId} AS row_id, b.batch_id, b.url_index, b.url, ${fromEpochMs("b.attempted_at")} AS attempted_at,
                      b.outcome, b.status_code, b.error, b.latency_ms, b.response_body, b.destination_revision, b.calls
                 FROM c
                 JOIN done ON done.destination_id = c.destination_id AND done.id = c.id
                CROSS JOIN LATERAL json_to_recordset(c.batches) AS ${batchColumns}
                WHERE c.batches IS NOT NULL) x
        ORDER BY x.destination_id, x.row_id, x.attempted_at
       ON CONFLICT (destination_id, id, attempted_at) DO UPDATE SET deliveries = delivery_batch_attempts.deliveries + excluded.deliveries
       RETURNING 1
     )
     SELECT id FROM done`,
    values: [recordsParameter(completions)],
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

/**
 * The batch as one JSON array of records, keys named as the statement's
 * columns, nulls left out (read as NULL). Written out by hand: it runs for
 * every webhook, and building an object per completion and attempt for
 * JSON.stringify cost about six times as much. Every string that is not one
 * of ours (URLs, errors, response bodies) goes through JSON.stringify.
 */
export function recordsParameter(completions: readonly DeliveryCompletion[]): string {
  let json = "[";
  for (let i = 0; i < completions.length; i++) {
    if (i > 0) json += ",";
    json += completionRecord(completions[i]!);
  }
  return `${json}]`;
}

/**
 * When the delivery finished: the end of its last attempt (start plus
 * latency; an abandoned attempt ends when it was cut short), not the start,
 * so a slow endpoint's Finished time comes after its First attempt time.
 * Without attempts (a release or cancel), when the completion was made.
 */
function finishedAt(c: DeliveryCompletion): number {
  let end = c.attemptedAt.getTime();
  for (const a of c.attempts) end = Math.max(end, a.attemptedAt.getTime() + a.latencyMs);
  return end;
}

function completionRecord(c: DeliveryCompletion): string {
  let json =
    `{"destination_id":${JSON.stringify(c.destinationId)},"id":${JSON.stringify(c.id)},"lease_token":${c.leaseToken}` +
    `,"status":"${c.status}","run_at":${c.runAt.getTime()},"attempted":${c.attempted},"attempted_at":${c.attemptedAt.getTime()}`;
  if (c.retryUrls !== null) json += `,"retry_urls":${JSON.stringify(c.retryUrls)}`;
  if (terminal.has(c.status)) json += `,"finalized_at":${finishedAt(c)}`;
  let own = "";
  let batches = "";
  for (const a of c.attempts) {
    if (isBatchReference(a))
      batches += `${batches === "" ? "" : ","}{"batch_id":${JSON.stringify(a.batch.id)},"calls":${a.batch.calls},${attemptFields(a)}}`;
    else own += `${own === "" ? "" : ","}{${attemptFields(a)}}`;
  }
  json += `,"attempts":[${own}]`;
  if (batches !== "") json += `,"batches":[${batches}]`;
  return `${json}}`;
}

/**
 * A batch call's attempt is written as a reference to its operation's row
 * unless it has something of its own that row cannot hold: the body it
 * sent, values a warehouse discarded (those keep a row of their own, as an
 * attempt without a batch does).
 */
function isBatchReference(a: AttemptResult): a is AttemptResult & { batch: BatchAttemptRef } {
  return a.batch !== undefined && a.sentBody === undefined && !a.discardedValues;
}

function attemptFields(a: AttemptResult): string {
  let json = `"url_index":${a.urlIndex},"url":${JSON.stringify(a.url)},"attempted_at":${a.attemptedAt.getTime()},"outcome":"${a.outcome}","latency_ms":${a.latencyMs}`;
  if (a.statusCode !== null) json += `,"status_code":${a.statusCode}`;
  if (a.error !== null) json += `,"error":${JSON.stringify(a.error)}`;
  if (a.responseBody !== null) json += `,"response_body":${JSON.stringify(a.responseBody)}`;
  if (a.destinationRevision !== undefined) json += `,"destination_revision":${a.destinationRevision}`;
  if (a.sentBody !== undefined) json += `,"sent_body":${JSON.stringify(a.sentBody)}`;
  if (a.discardedValues) json += `,"discarded_values":${a.discardedValues}`;
  return json;
}
