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
