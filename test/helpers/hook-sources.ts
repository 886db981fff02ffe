import { createHash, randomBytes, randomUUID } from "node:crypto";
import http from "node:http";
import type { HookSettings } from "../../src/ingest/hooks/hook-settings.js";
import type { TestServer } from "./server.js";

export interface TestHookSource {
  id: string;
  token: string;
  /** http://127.0.0.1:PORT/hooks/<token> */
  url: string;
}

/** Settings as the sources piece stores them: every field present, defaults filled. */
export function hookSettings(overrides: Partial<HookSettings> = {}): HookSettings {
  return {
    verifier: "none",
    secret: "",
    transform: "",
    idempotencyKey: "",
    response: { status: 200, contentType: "application/json", body: '{"accepted":true}' },
    tokenHeader: "",
    maxRequestsPerSecond: 0,
    ...overrides,
  };
}

/** A webhook source written straight into the database (token stored as its sha256, as the API does). */
export async function insertWebhookSource(server: TestServer, overrides: Partial<HookSettings> = {}): Promise<TestHookSource> {
  const id = randomUUID();
  const token = randomBytes(32).toString("base64url");
  await server.pool.query(
    `INSERT INTO sources (id, name, write_key_hash, kind, webhook, hook_token_hash)
     VALUES ($1, 'hook source', $2, 'webhook', $3, $4)`,
    [id, randomBytes(32), JSON.stringify(hookSettings(overrides)), createHash("sha256").update(token).digest()],
  );
  return { id, token, url: `${server.url}/hooks/${token}` };
}

export interface HookRow {
  id: string;
  method: string;
  query: string;
  content_type: string;
  headers: Record<string, string | string[]>;
  body: Buffer;
  idempotency_key: string | null;
  status: string;
  traceparent: string | null;
  tracestate: string | null;
}

export async function hookRows(server: TestServer, sourceId: string): Promise<HookRow[]> {
  const result = await server.pool.query<HookRow>(
    `SELECT id::text, method, query, content_type, headers, body, idempotency_key, status, traceparent, tracestate
       FROM hook_requests WHERE source_id = $1 ORDER BY hook_requests.id`,
    [sourceId],
  );
  return result.rows;
}

export interface HookAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** Resolves with the answer to an upload that may still be open. */
export function answerOf(req: http.ClientRequest): Promise<HookAnswer> {
  return new Promise((resolve, reject) => {
    req.on("error", reject);
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString() }));
    });
  });
}

/** A raw request to an inbound URL, for uploads the test drives itself. */
export function openUpload(url: string, headers: Record<string, string | number> = {}): http.ClientRequest {
  return http.request(url, { method: "POST", headers: { "content-type": "application/json", ...headers } });
}

/** Posts a whole body and reads the answer. */
export async function postHook(
  url: string,
  body: string | Buffer,
  headers: Record<string, string> = {},
  method = "POST",
): Promise<HookAnswer> {
  const req = http.request(url, { method, headers: { "content-type": "application/json", ...headers } });
  const answer = answerOf(req);
  req.end(body);
  return answer;
}
