import type { Queryable } from "../pool.js";

/** One received request, as hook_requests stores it. */
export interface NewHookRequest {
  sourceId: string;
  receivedAt: Date;
  method: string;
  query: string;
  contentType: string;
  headers: Record<string, string | string[]>;
  body: Buffer;
  idempotencyKey: string | undefined;
  traceparent?: string | undefined;
  tracestate?: string | undefined;
}

/**
 * Stores a request, committed when this resolves (one statement, its own
 * transaction). Status pending, unless another request of the source with
 * the same idempotency key is already stored (the unique partial index):
 * then this one is stored as 'duplicate', which the processor never takes.
 * One statement either way: the first INSERT yields to the index, the
 * second runs only when the first stored nothing. A concurrent first
 * request with the same key makes the first INSERT wait for its commit.
 */
export async function insertHookRequest(db: Queryable, request: NewHookRequest): Promise<{ id: string; duplicate: boolean }> {
  const result = await db.query<{ id: string; status: string }>(
    `WITH first AS (
       INSERT INTO hook_requests (source_id, received_at, method, query, content_type, headers, body, idempotency_key,
                                  status, traceparent, tracestate)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9, $10)
       ON CONFLICT (source_id, idempotency_key) WHERE idempotency_key IS NOT NULL AND status <> 'duplicate' DO NOTHING
       RETURNING id, status
     ), dup AS (
       INSERT INTO hook_requests (source_id, received_at, method, query, content_type, headers, body, idempotency_key,
                                  status, traceparent, tracestate)
       SELECT $1, $2, $3, $4, $5, $6, $7, $8, 'duplicate', $9, $10
        WHERE NOT EXISTS (SELECT 1 FROM first)
       RETURNING id, status
     )
     SELECT id::text, status FROM first UNION ALL SELECT id::text, status FROM dup`,
    [
      request.sourceId,
      request.receivedAt,
      request.method,
      request.query,
      request.contentType,
      JSON.stringify(request.headers),
      request.body,
      request.idempotencyKey ?? null,
      request.traceparent ?? null,
      request.tracestate ?? null,
    ],
  );
  const row = result.rows[0]!;
  return { id: row.id, duplicate: row.status === "duplicate" };
}

/**
 * Stores several requests in one statement and one commit, in order (ids
 * increase with the array's order, which is the order of receipt). A
 * request is a duplicate when its key is already stored for its source or
 * an earlier request of the batch has it. Resolves with one result per
 * request, in order. A concurrent statement storing the same key first
 * makes this one fail with a unique violation (23505): the caller then
 * stores the batch one request at a time with insertHookRequest.
 */
export async function insertHookRequests(
  db: Queryable,
  requests: readonly NewHookRequest[],
): Promise<Array<{ id: string; duplicate: boolean }>> {
  const column = <T>(pick: (r: NewHookRequest) => T) => requests.map(pick);
  const result = await db.query<{ id: string; status: string }>(
    `WITH input AS (
       SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::bytea[], $8::text[],
                            $9::text[], $10::text[])
         WITH ORDINALITY AS r(source_id, received_at, method, query, content_type, headers, body, idempotency_key, traceparent, tracestate, ord)
     )
     INSERT INTO hook_requests (source_id, received_at, method, query, content_type, headers, body, idempotency_key,
                                status, traceparent, tracestate)
     SELECT source_id, received_at, method, query, content_type, headers, body, idempotency_key,
            CASE WHEN idempotency_key IS NOT NULL AND (
                   EXISTS (SELECT 1 FROM hook_requests h
                            WHERE h.source_id = i.source_id AND h.idempotency_key = i.idempotency_key AND h.status <> 'duplicate')
                   OR EXISTS (SELECT 1 FROM input e
                               WHERE e.source_id = i.source_id AND e.idempotency_key = i.idempotency_key AND e.ord < i.ord))
                 THEN 'duplicate' ELSE 'pending' END,
            traceparent, tracestate
       FROM input i ORDER BY ord
     RETURNING id, status`,
    [
      column((r) => r.sourceId),
      column((r) => r.receivedAt),
      column((r) => r.method),
      column((r) => r.query),
      column((r) => r.contentType),
      column((r) => JSON.stringify(r.headers)),
      column((r) => r.body),
      column((r) => r.idempotencyKey ?? null),
      column((r) => r.traceparent ?? null),
      column((r) => r.tracestate ?? null),
    ],
  );
  // Rows are inserted in the SELECT's order, so their identity ids follow the array's order.
  const rows = result.rows
    .map((row) => ({ id: BigInt(row.id), status: row.status }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return rows.map((row) => ({ id: String(row.id), duplicate: row.status === "duplicate" }));
}

/** The webhook sources whose token hashes are among `tokenHashes` (sha256 of each token). */
export async function selectHookSourcesByTokenHashes(
  db: Queryable,
  tokenHashes: readonly Buffer[],
): Promise<Array<{ id: string; webhook: Record<string, unknown>; hook_token_hash: Buffer }>> {
  const result = await db.query<{ id: string; webhook: Record<string, unknown>; hook_token_hash: Buffer }>(
    "SELECT id, webhook, hook_token_hash FROM sources WHERE hook_token_hash = ANY($1::bytea[]) AND kind = 'webhook'",
    [tokenHashes],
  );
  return result.rows;
}
