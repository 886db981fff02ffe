import { createHash } from "node:crypto";
import type { AttemptResult, BatchAttemptRef } from "./attempt-result.js";
import type { DeliveryCompletion, DeliveryStatus } from "./delivery-completion.js";

const terminal = new Set<DeliveryStatus>(["delivered", "failed", "expired", "cancelled"]);

/** The completion statement's two parameters: the completions, and the batch attempt rows they reference. */
export interface CompletionParameters {
  records: string;
  batchRows: string;
}

/**
 * The batch as JSON arrays of records, keys named as the statement's
 * columns, nulls left out (read as NULL). Written out by hand: it runs for
 * every webhook, and building an object per completion and attempt for
 * JSON.stringify cost about six times as much. Every string that is not one
 * of ours (URLs, errors, response bodies) goes through JSON.stringify.
 *
 * A batch call's attempt travels as the id of its operation's row
 * (`batch_refs`, read as uuid[]); each row travels once in `batchRows`, so
 * the statement parses no per-call JSON for it.
 */
export function completionParameters(completions: readonly DeliveryCompletion[]): CompletionParameters {
  const rows = new Map<string, string>();
  let json = "[";
  for (let i = 0; i < completions.length; i++) {
    if (i > 0) json += ",";
    json += completionRecord(completions[i]!, rows);
  }
  return { records: `${json}]`, batchRows: `[${[...rows.values()].join(",")}]` };
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

function completionRecord(c: DeliveryCompletion, rows: Map<string, string>): string {
  let json =
    `{"destination_id":${JSON.stringify(c.destinationId)},"id":${JSON.stringify(c.id)},"lease_token":${c.leaseToken}` +
    `,"status":"${c.status}","run_at":${c.runAt.getTime()},"attempted":${c.attempted},"attempted_at":${c.attemptedAt.getTime()}`;
  if (c.retryUrls !== null) json += `,"retry_urls":${JSON.stringify(c.retryUrls)}`;
  if (terminal.has(c.status)) json += `,"finalized_at":${finishedAt(c)}`;
  let own = "";
  let refs = "";
  for (const a of c.attempts) {
    if (isBatchReference(a)) {
      const id = batchRowId(a);
      const key = `${c.destinationId} ${id}`;
      if (!rows.has(key)) rows.set(key, batchRow(c.destinationId, id, a));
      refs += `${refs === "" ? "" : ","}"${id}"`;
    } else own += `${own === "" ? "" : ","}{${attemptFields(a)}}`;
  }
  if (own !== "") json += `,"attempts":[${own}]`;
  if (refs !== "") json += `,"batch_refs":[${refs}]`;
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

// Row ids of each operation's results, made once per operation and result
// (every call of an operation carries the same batch object).
const rowIds = new WeakMap<BatchAttemptRef, Map<string, string>>();

/**
 * The id of the row an attempt of a batch is written to: one row per
 * operation (batch id and URL) and result (outcome and error), so the calls
 * of a plain batch share one row and a per-item failure has its own,
 * whichever statement writes them (md5 of those, as a uuid).
 */
export function batchRowId(a: AttemptResult & { batch: BatchAttemptRef }): string {
  const result = `${a.urlIndex}/${a.outcome}/${a.error === null ? "n" : `e${a.error}`}`;
  let ids = rowIds.get(a.batch);
  if (!ids) {
    ids = new Map();
    rowIds.set(a.batch, ids);
  }
  let id = ids.get(result);
  if (id === undefined) {
    const hex = createHash("md5").update(`${a.batch.id}/${result}`).digest("hex");
    id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
    ids.set(result, id);
  }
  return id;
}

function batchRow(destinationId: string, id: string, a: AttemptResult & { batch: BatchAttemptRef }): string {
  return `{"destination_id":${JSON.stringify(destinationId)},"id":"${id}","batch_id":${JSON.stringify(a.batch.id)},"calls":${a.batch.calls},${attemptFields(a)}}`;
}

function attemptFields(a: AttemptResult): string {
  let json = `"url_index":${a.urlIndex},"url":${JSON.stringify(a.url)},"attempted_at":${a.attemptedAt.getTime()},"outcome":"${a.outcome}","latency_ms":${a.latencyMs}`;
  if (a.statusCode !== null) json += `,"status_code":${a.statusCode}`;
  if (a.error !== null) json += `,"error":${JSON.stringify(a.error)}`;
  if (a.responseBody !== null) json += `,"response_body":${JSON.stringify(a.responseBody)}`;
  if (a.destinationRevision !== undefined) json += `,"destination_revision":${a.destinationRevision}`;
  if (a.sentBody !== undefined) json += `,"sent_body":${JSON.stringify(a.sentBody)}`;
  if (a.discardedValues) json += `,"discarded_values":${a.discardedValues}`;
  if (a.subscription !== undefined) json += `,"subscription":${JSON.stringify(a.subscription)}`;
  if (a.method !== undefined) json += `,"method":${JSON.stringify(a.method)}`;
  if (a.request !== undefined) {
    json += `,"request_headers":${JSON.stringify(a.request.headers)},"request_body":${JSON.stringify(a.request.body)}`;
    json += `,"request_body_bytes":${a.request.bodyBytes}`;
  }
  return json;
}
