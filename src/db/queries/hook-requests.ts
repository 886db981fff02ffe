import type { Queryable } from "../pool.js";

/*
 * The processing side of webhook sources' stored requests: which process
 * works a source (hook_source_leases, fenced by a lease id like background
 * jobs), its pending requests in order of receipt, their outcome, and what
 * the API reads and requeues. Receipt (the INSERT) is the inbound route's.
 */

export type HookRequestStatus = "pending" | "processed" | "failed" | "duplicate";

/** One stored request, as processing and the API read it. */
export interface HookRequestRow {
  id: string;
  source_id: string;
  received_at: Date;
  method: string;
  query: string;
  content_type: string;
  headers: Record<string, unknown>;
  body: Buffer;
  idempotency_key: string | null;
  status: HookRequestStatus;
  error: string | null;
  message_ids: string[];
  attempts: number;
  processed_at: Date | null;
  traceparent: string | null;
  tracestate: string | null;
}

const columns = `id, source_id, received_at, method, query, content_type, headers, body, idempotency_key, status, error,
  message_ids, attempts, processed_at, traceparent, tracestate`;

/**
 * Leases one webhook source that has pending requests and that no live
 * lease holds (none, or one whose holder let it run out). The sources with
 * pending work are found by a skip scan of the pending index (one probe per
 * source, however many requests wait). Two processes racing for one source
 * meet on its lease row: the second sees the first's fresh lease and gets
 * nothing.
 */
export async function claimHookSource(
  db: Queryable,
  leaseId: string,
  now: Date,
  leaseMs: number,
  preferred?: string,
): Promise<string | undefined> {
  const result = await db.query<{ source_id: string }>(
    `WITH RECURSIVE pending(source_id) AS (
       (SELECT source_id FROM hook_requests WHERE status = 'pending' ORDER BY source_id LIMIT 1)
       UNION ALL
       SELECT (SELECT r.source_id FROM hook_requests r WHERE r.status = 'pending' AND r.source_id > p.source_id ORDER BY r.source_id LIMIT 1)
         FROM pending p WHERE p.source_id IS NOT NULL
     ), free AS (
       SELECT p.source_id FROM pending p LEFT JOIN hook_source_leases l USING (source_id)
        WHERE p.source_id IS NOT NULL AND (l.lease_until IS NULL OR l.lease_until < $2)
        ORDER BY p.source_id = $4::uuid DESC NULLS LAST, random() LIMIT 1
     )
     INSERT INTO hook_source_leases (source_id, lease_id, lease_until)
     SELECT source_id, $1, $2::timestamptz + make_interval(secs => $3::double precision / 1000) FROM free
     ON CONFLICT (source_id) DO UPDATE SET lease_id = EXCLUDED.lease_id, lease_until = EXCLUDED.lease_until
      WHERE hook_source_leases.lease_until IS NULL OR hook_source_leases.lease_until < $2
     RETURNING source_id`,
    [leaseId, now, leaseMs, preferred ?? null],
  );
  return result.rows[0]?.source_id;
}

/**
 * Inside a page's transaction: locks the source's lease row if this
 * process still holds it, and extends it. False when it was taken over
 * (this process's lease ran out): the page must not be written.
 */
export async function lockHookLease(db: Queryable, sourceId: string, leaseId: string, now: Date, leaseMs: number): Promise<boolean> {
  const result = await db.query(
    `UPDATE hook_source_leases SET lease_until = $3::timestamptz + make_interval(secs => $4::double precision / 1000)
      WHERE source_id = $1 AND lease_id = $2`,
    [sourceId, leaseId, now, leaseMs],
  );
  return (result.rowCount ?? 0) > 0;
}

/** Gives the source up (no more pending work here, or shutting down); another process may take it at once. */
export async function releaseHookLease(db: Queryable, sourceId: string, leaseId: string): Promise<void> {
  await db.query("DELETE FROM hook_source_leases WHERE source_id = $1 AND lease_id = $2", [sourceId, leaseId]);
}

/** The source's settings as processing needs them; undefined when it is gone or no webhook source. */
export async function selectHookSettingsJson(db: Queryable, sourceId: string): Promise<Record<string, unknown> | undefined> {
  const result = await db.query<{ webhook: Record<string, unknown> | null }>(
    "SELECT webhook FROM sources WHERE id = $1 AND kind = 'webhook'",
    [sourceId],
  );
  return result.rows[0]?.webhook ?? undefined;
}

/** The source's oldest pending requests (after `afterId`), in order of receipt. */
export async function selectPendingHookRequests(
  db: Queryable,
  sourceId: string,
  afterId: string,
  limit: number,
): Promise<HookRequestRow[]> {
  const result = await db.query<HookRequestRow>(
    `SELECT ${columns} FROM hook_requests WHERE source_id = $1 AND status = 'pending' AND id > $2 ORDER BY id LIMIT $3`,
    [sourceId, afterId, limit],
  );
  return result.rows;
}

/** What processing made of one request. */
export interface HookRequestOutcome {
  id: string;
  status: "processed" | "failed";
  error: string | null;
  messageIds: string[];
}

/** Writes the outcomes (only over requests still pending: a request is processed once per requeue). */
export async function recordHookOutcomes(db: Queryable, outcomes: readonly HookRequestOutcome[], now: Date): Promise<void> {
  if (outcomes.length === 0) return;
  await db.query(
    `UPDATE hook_requests r
        SET status = o.status, error = o.error, message_ids = o.message_ids, attempts = r.attempts + 1, processed_at = $2
       FROM jsonb_to_recordset($1::jsonb) AS o(id bigint, status text, error text, message_ids text[])
      WHERE r.id = o.id AND r.status = 'pending'`,
    [JSON.stringify(outcomes.map((o) => ({ id: o.id, status: o.status, error: o.error, message_ids: o.messageIds }))), now],
  );
}

/** Newest first, after the (received_at, id) cursor. */
export async function listHookRequestRows(
  db: Queryable,
  options: {
    sourceId: string;
    status: HookRequestStatus | undefined;
    since: Date | undefined;
    before?: { receivedAt: string; id: string } | undefined;
    limit: number;
  },
): Promise<Array<HookRequestRow & { cursor_at: string }>> {
  const result = await db.query<HookRequestRow & { cursor_at: string }>(
    `SELECT ${columns}, received_at::text AS cursor_at FROM hook_requests
      WHERE source_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::timestamptz IS NULL OR received_at >= $3)
        AND ($4::timestamptz IS NULL OR (received_at, id) < ($4, $5::bigint))
      ORDER BY received_at DESC, id DESC LIMIT $6`,
    [
      options.sourceId,
      options.status ?? null,
      options.since ?? null,
      options.before?.receivedAt ?? null,
      options.before?.id ?? null,
      options.limit,
    ],
  );
  return result.rows;
}

/** The given requests of the source (any status), in order of receipt. */
export async function selectHookRequestsById(db: Queryable, sourceId: string, ids: readonly string[]): Promise<HookRequestRow[]> {
  const result = await db.query<HookRequestRow>(
    `SELECT ${columns} FROM hook_requests WHERE source_id = $1 AND id = ANY($2::bigint[]) ORDER BY id`,
    [sourceId, ids],
  );
  return result.rows;
}

/** The source's most recent requests that were processed or failed (duplicates made nothing), oldest first. */
export async function selectRecentHookRequests(db: Queryable, sourceId: string, limit: number): Promise<HookRequestRow[]> {
  const result = await db.query<HookRequestRow>(
    `SELECT * FROM (SELECT ${columns} FROM hook_requests WHERE source_id = $1 AND status <> 'duplicate'
                     ORDER BY received_at DESC, id DESC LIMIT $2) r ORDER BY id`,
    [sourceId, limit],
  );
  return result.rows;
}

/**
 * Sets requests back to pending: the given ids (processed or failed), or
 * the failed ones (and processed ones too, with includeProcessed) received
 * in [since, until). Their calls already stored keep their messageIds, so
 * running them again stores nothing twice. Returns how many.
 */
export async function requeueHookRequests(
  db: Queryable,
  options: { sourceId: string; ids: readonly string[]; since: Date | undefined; until: Date; includeProcessed: boolean },
): Promise<number> {
  const statuses = options.includeProcessed || options.ids.length > 0 ? ["failed", "processed"] : ["failed"];
  const result = await db.query(
    `UPDATE hook_requests SET status = 'pending'
      WHERE source_id = $1 AND status = ANY($2::text[])
        AND (CASE WHEN cardinality($3::bigint[]) > 0 THEN id = ANY($3::bigint[])
                  ELSE ($4::timestamptz IS NULL OR received_at >= $4) AND received_at < $5 END)`,
    [options.sourceId, statuses, options.ids, options.since ?? null, options.until],
  );
  return result.rowCount ?? 0;
}

/** Deletes up to `limit` requests received before `cutoff` (retention); returns how many. */
export async function purgeOldHookRequests(db: Queryable, cutoff: Date, limit: number): Promise<number> {
  const result = await db.query(
    `DELETE FROM hook_requests WHERE id IN (SELECT id FROM hook_requests WHERE received_at < $1 ORDER BY received_at LIMIT $2)`,
    [cutoff, limit],
  );
  return result.rowCount ?? 0;
}
