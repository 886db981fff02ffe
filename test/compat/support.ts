import { gzipSync } from "node:zlib";
import type { TestServer } from "../helpers/server.js";

export interface CompatResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON body (undefined when the body is empty). */
  json: any;
}

export interface PostOptions {
  /** Sent as Basic auth (key as user name, empty password). */
  writeKey?: string;
  headers?: Record<string, string>;
  /** gzip the body and set Content-Encoding: gzip. */
  gzip?: boolean;
  method?: string;
}

export function basicAuth(writeKey: string): string {
  return `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`;
}

/** A raw request to the compatible API; objects are sent as JSON. */
export async function post(server: TestServer, path: string, body: unknown, options: PostOptions = {}): Promise<CompatResponse> {
  let payload: Buffer | string | undefined =
    body === undefined ? undefined : typeof body === "string" || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const headers: Record<string, string> = { "content-type": "application/json", ...options.headers };
  if (options.writeKey !== undefined) headers.authorization = basicAuth(options.writeKey);
  if (options.gzip && payload !== undefined) {
    payload = gzipSync(payload);
    headers["content-encoding"] = "gzip";
  }
  const response = await fetch(`${server.url}${path}`, {
    method: options.method ?? "POST",
    headers,
    body: payload === undefined ? undefined : new Uint8Array(Buffer.from(payload)),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, json: text ? JSON.parse(text) : undefined };
}

/** The parsed webhook bodies a receiver got, in arrival order. */
export function bodies(requests: Array<{ body: string }>): any[] {
  return requests.map((r) => JSON.parse(r.body));
}

/** Rows of `deliveries` for a destination, with their message's id. */
export async function deliveredMessageIds(server: TestServer, destinationId: string): Promise<string[]> {
  const result = await server.pool.query<{ message_id: string }>(
    `SELECT m.message_id FROM deliveries d JOIN messages m ON m.id = d.message_pk
      WHERE d.destination_id = $1 ORDER BY d.id`,
    [destinationId],
  );
  return result.rows.map((r) => r.message_id);
}

/** Stored messages of a source, by messageId. */
export async function storedMessageIds(server: TestServer, sourceId: string): Promise<string[]> {
  const result = await server.pool.query<{ message_id: string }>("SELECT message_id FROM messages WHERE source_id = $1 ORDER BY id", [
    sourceId,
  ]);
  return result.rows.map((r) => r.message_id);
}

/** Keys in body order, as docs/webhooks.md#the-body lists them. */
export const specKeyOrder: Record<string, string[]> = {
  track: ["version", "type", "userId", "event", "properties", "context", "timestamp", "messageId", "anonymousId"],
  page: ["version", "type", "userId", "name", "category", "properties", "context", "timestamp", "messageId", "anonymousId"],
  screen: ["version", "type", "userId", "name", "properties", "context", "timestamp", "messageId", "anonymousId"],
  identify: ["version", "type", "userId", "traits", "context", "timestamp", "messageId", "anonymousId"],
  group: ["version", "type", "userId", "groupId", "traits", "context", "timestamp", "messageId", "anonymousId"],
  alias: ["version", "type", "Previous ID", "User ID", "context", "timestamp", "messageId"],
};

/**
 * The keys a delivered body must have, in order: the documented order with absent
 * optional keys left out (`present` lists which optional ones the call set).
 */
export function expectedKeys(type: string, present: string[]): string[] {
  const always = new Set(["version", "type", "context", "timestamp", "messageId"]);
  if (type === "alias") for (const k of ["Previous ID", "User ID"]) always.add(k);
  return specKeyOrder[type]!.filter((key) => always.has(key) || present.includes(key));
}
