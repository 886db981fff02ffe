import { createHmac } from "node:crypto";
import { createClient, type Client } from "@connectrpc/connect";
import { AudienceKind, AudienceService, type Audience } from "../../gen/waypost/v1/audience_pb.js";
import { deleteMessages } from "../helpers/job-table-fixtures.js";
import type { TestServer } from "../helpers/server.js";

/** An AudienceService client that sends the admin token on every call. */
export function audienceClient(server: TestServer): Client<typeof AudienceService> {
  return withAdmin(createClient(AudienceService, server.transport), server.adminToken);
}

/** A client whose every call carries the admin token (unary and streaming alike). */
export function withAdmin<T extends object>(client: T, adminToken: string): T {
  return new Proxy(client, {
    get(target, prop, receiver) {
      const method = Reflect.get(target, prop, receiver);
      if (typeof method !== "function") return method;
      return (request: unknown, callOptions: { headers?: Record<string, string> } = {}) =>
        method.call(target, request, {
          ...callOptions,
          headers: { authorization: `Bearer ${adminToken}`, ...callOptions.headers },
        });
    },
  });
}

export async function createAudience(server: TestServer, sourceId: string, name: string, kind = AudienceKind.AUDIENCE): Promise<Audience> {
  const { audience } = await audienceClient(server).createAudience({ audience: { sourceId, name, kind } });
  return audience!;
}

export interface StoredCall {
  user_id: string;
  payload: string;
  received_at: Date;
}

/** The identify messages stored for a source, by user id. */
export async function identifyCalls(server: TestServer, sourceId: string): Promise<Map<string, unknown>> {
  const result = await server.pool.query<StoredCall>(
    "SELECT user_id, payload, received_at FROM messages WHERE source_id = $1 AND type = 'identify' ORDER BY id",
    [sourceId],
  );
  const traits = new Map<string, unknown>();
  for (const row of result.rows) {
    const body = JSON.parse(row.payload) as { userId: string; traits: Record<string, unknown> };
    if (traits.has(body.userId)) throw new Error(`two identify calls for ${body.userId}`);
    traits.set(body.userId, body.traits);
  }
  return traits;
}

/** Deletes the stored messages of a source, so the next sync's calls are all that is there. */
export async function clearMessages(server: TestServer, sourceId: string): Promise<void> {
  await deleteMessages(server.pool, "source_id = $1", [sourceId]);
}

export async function countRows(server: TestServer, sql: string, params: unknown[] = []): Promise<number> {
  const result = await server.pool.query<{ n: string }>(`SELECT count(*) AS n FROM (${sql}) q`, params);
  return Number(result.rows[0]!.n);
}

/** The stored membership of an audience: user id → value. */
export async function storedMembers(server: TestServer, audienceId: string): Promise<Record<string, unknown>> {
  const result = await server.pool.query<{ user_id: string; value: unknown }>(
    "SELECT user_id, value FROM audience_members WHERE audience_id = $1 ORDER BY user_id",
    [audienceId],
  );
  return Object.fromEntries(result.rows.map((r) => [r.user_id, r.value]));
}

export function hmacSha1Hex(secret: string, body: string): string {
  return createHmac("sha1", secret).update(body, "utf8").digest("hex");
}

/** An async iterable of stream requests, one per chunk. */
export async function* streamOf<T>(messages: T[]): AsyncGenerator<T> {
  for (const message of messages) yield message;
}
