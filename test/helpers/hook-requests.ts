import { randomBytes } from "node:crypto";
import type { Queryable } from "../../src/db/pool.js";

/** A webhook source's settings jsonb, with defaults for what a test does not set. */
export function hookSettings(overrides: { verifier?: string; transform?: string } = {}): Record<string, unknown> {
  return {
    verifier: overrides.verifier ?? "none",
    secret: "",
    transform: overrides.transform ?? "",
    idempotencyKey: "",
    response: { status: 200, contentType: "application/json", body: '{"accepted":true}' },
    tokenHeader: "",
    maxRequestsPerSecond: 0,
  };
}

/** Makes an existing source a webhook source (as the source service would), with these settings. */
export async function makeWebhookSource(db: Queryable, sourceId: string, settings = hookSettings()): Promise<void> {
  await db.query("UPDATE sources SET kind = 'webhook', webhook = $2, hook_token_hash = $3 WHERE id = $1", [
    sourceId,
    JSON.stringify(settings),
    randomBytes(32),
  ]);
}

/** Replaces a webhook source's settings. */
export async function setHookSettings(db: Queryable, sourceId: string, settings: Record<string, unknown>): Promise<void> {
  await db.query("UPDATE sources SET webhook = $2 WHERE id = $1", [sourceId, JSON.stringify(settings)]);
}

export interface StoredRequest {
  method?: string;
  query?: string;
  contentType?: string;
  headers?: Record<string, string>;
  body?: string | object;
  idempotencyKey?: string;
  traceparent?: string;
  receivedAt?: Date;
  /** Pending (the default: the processor takes it), or stored as already failed (a processor leaves it alone). */
  status?: "pending" | "failed";
}

/** Stores a pending request as the inbound route does; returns its id. */
export async function insertHookRequest(db: Queryable, sourceId: string, request: StoredRequest = {}): Promise<string> {
  const body = typeof request.body === "string" ? request.body : JSON.stringify(request.body ?? {});
  const contentType = request.contentType ?? "application/json";
  const result = await db.query<{ id: string }>(
    `INSERT INTO hook_requests (source_id, received_at, method, query, content_type, headers, body, idempotency_key, status, traceparent)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $10, $9) RETURNING id`,
    [
      sourceId,
      request.receivedAt ?? new Date(),
      request.method ?? "POST",
      request.query ?? "",
      contentType,
      JSON.stringify({ "content-type": contentType, ...request.headers }),
      Buffer.from(body),
      request.idempotencyKey ?? null,
      request.traceparent ?? null,
      request.status ?? "pending",
    ],
  );
  return result.rows[0]!.id;
}

export interface HookRequestState {
  status: string;
  error: string | null;
  message_ids: string[];
  attempts: number;
}

export async function hookRequestState(db: Queryable, id: string): Promise<HookRequestState> {
  const result = await db.query<HookRequestState>("SELECT status, error, message_ids, attempts FROM hook_requests WHERE id = $1", [id]);
  return result.rows[0]!;
}
