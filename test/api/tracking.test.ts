import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { describe, expect } from "vitest";
import { TrackingService } from "../../gen/waypost/v1/tracking_pb.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";

const test = testWith();
let source: { id: string; writeKey: string };

test.beforeAll(async ({ server, receiver }) => {
  source = await server.createSource("web");
  await server.createDestination({ name: "hook", sourceIds: [source.id], webhooks: [{ url: receiver.url }] });
});

/** A raw Connect JSON call, for inputs a typed client cannot send. */
async function post(server: TestServer, method: string, body: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${server.url}/waypost.v1.TrackingService/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${source.writeKey}`, ...headers },
    body,
  });
  return { status: response.status, json: (await response.json()) as { code?: string; message?: string } & Record<string, unknown> };
}

async function storedCount(server: TestServer): Promise<number> {
  const result = await server.pool.query("SELECT count(*)::int AS n FROM messages WHERE source_id = $1", [source.id]);
  return result.rows[0].n;
}

describe("authentication", () => {
  test("missing and unknown write keys are unauthenticated", async ({ server }) => {
    const missing = await post(server, "Track", '{"track":{"userId":"u","event":"E"}}', { authorization: "" });
    expect(missing.json.code).toBe("unauthenticated");
    const unknown = await post(server, "Track", '{"track":{"userId":"u","event":"E"}}', { authorization: "Bearer wk_nope" });
    expect(unknown.json.code).toBe("unauthenticated");
  });

  test("Basic auth with the write key as user name works", async ({ server }) => {
    const basic = Buffer.from(`${source.writeKey}:`).toString("base64");
    const ok = await post(server, "Track", '{"track":{"userId":"u","event":"E"}}', { authorization: `Basic ${basic}` });
    expect(ok.status).toBe(200);
    expect(ok.json.messageId).toMatch(/^[0-9a-f-]{36}$/);
  });

  test("the admin token is not a write key", async ({ server }) => {
    const result = await post(server, "Track", '{"track":{"userId":"u","event":"E"}}', { authorization: `Bearer ${server.adminToken}` });
    expect(result.json.code).toBe("unauthenticated");
  });
});

describe("unary RPCs", () => {
  test("every call type is stored and acknowledged with its messageId", async ({ server }) => {
    const client = server.tracking(source.writeKey);
    const ids = [
      (await client.identify({ identify: { userId: "u1", traits: { a: 1 } } })).messageId,
      (await client.track({ track: { userId: "u1", event: "E" } })).messageId,
      (await client.page({ page: { anonymousId: "a1", name: "Home" } })).messageId,
      (await client.screen({ screen: { userId: "u1", name: "Main" } })).messageId,
      (await client.group({ group: { userId: "u1", groupId: "g1" } })).messageId,
      (await client.alias({ alias: { userId: "u1", previousId: "a1" } })).messageId,
    ];
    const stored = await server.pool.query("SELECT message_id, type FROM messages WHERE message_id = ANY($1)", [ids]);
    expect(stored.rows.map((r) => r.type).sort()).toEqual(["alias", "group", "identify", "page", "screen", "track"]);
  });

  test("an invalid call is invalid_argument naming the field", async ({ server }) => {
    const client = server.tracking(source.writeKey);
    const error = await client.track({ track: { userId: "u1" } }).catch((e) => ConnectError.from(e));
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.InvalidArgument);
    expect((error as ConnectError).rawMessage).toContain("track.event");
    const missing = await post(server, "Alias", "{}");
    expect(missing.json.code).toBe("invalid_argument");
    expect(missing.json.message).toContain("alias");
  });

  test("a repeated messageId is acknowledged and stored once", async ({ server }) => {
    const client = server.tracking(source.writeKey);
    const before = await storedCount(server);
    const first = await client.track({ track: { messageId: "dup-1", userId: "u", event: "E" } });
    const second = await client.track({ track: { messageId: "dup-1", userId: "u", event: "E" } });
    expect(first.messageId).toBe("dup-1");
    expect(second.messageId).toBe("dup-1");
    expect(await storedCount(server)).toBe(before + 1);
    const deliveries = await server.pool.query(
      "SELECT count(*)::int AS n FROM deliveries d JOIN messages m ON m.id = d.message_pk WHERE m.message_id = 'dup-1'",
    );
    expect(deliveries.rows[0].n).toBe(1);
  });
});

describe("Batch", () => {
  test("the documented shape: accepted count, rejected by index with a reason", async ({ server }) => {
    const result = await post(
      server,
      "Batch",
      JSON.stringify({ batch: [{ track: { userId: "u1", event: "Signed Up" } }, { identify: {} }, {}] }),
    );
    expect(result.status).toBe(200);
    expect(result.json.accepted).toBe(1);
    expect(result.json.rejected).toEqual([
      { index: 1, reason: expect.stringContaining("userId") },
      { index: 2, reason: expect.stringContaining("no call type") },
    ]);
  });

  test("a rejection at index 0 names its index in Connect JSON", async ({ server }) => {
    const result = await post(
      server,
      "Batch",
      JSON.stringify({ batch: [{ identify: {} }, { track: { userId: "u1", event: "Signed Up" } }] }),
    );
    expect(result.status).toBe(200);
    expect(result.json.rejected).toEqual([{ index: 0, reason: expect.stringContaining("userId") }]);
  });

  test("an oversized call inside a batch is rejected alone; the rest are stored", async ({ server }) => {
    const before = await storedCount(server);
    const big = "x".repeat(40 * 1024);
    const result = await server.tracking(source.writeKey).batch({
      batch: [
        { type: { case: "track", value: { userId: "u", event: "small" } } },
        { type: { case: "track", value: { userId: "u", event: "big", properties: { big } } } },
        { type: { case: "track", value: { userId: "u", event: "small too" } } },
      ],
    });
    expect(result.accepted).toBe(2);
    expect(result.rejected).toHaveLength(1);
    expect(result.rejected[0]!.index).toBe(1);
    expect(result.rejected[0]!.reason).toContain("32 KB");
    expect(await storedCount(server)).toBe(before + 2);
  });

  test("a request over 500 KB is rejected whole with resource_exhausted naming the limit", async ({ server }) => {
    const before = await storedCount(server);
    const calls = Array.from({ length: 30 }, (_, i) => ({
      track: { userId: "u", event: `e${i}`, properties: { pad: "y".repeat(20_000) } },
    }));
    const result = await post(server, "Batch", JSON.stringify({ batch: calls }));
    expect(result.json.code).toBe("resource_exhausted");
    expect(result.json.message).toMatch(/512000|500 KB/);
    expect(await storedCount(server)).toBe(before);
  });
});

describe("malformed input never crashes the server", () => {
  test("bad JSON, wrong types, unknown oneof", async ({ server }) => {
    for (const body of ["{", '{"batch": 5}', '{"batch":[{"trak":{}}]}', '{"track":{"userId":7,"event":"E"}}', "\u0000\u0001"]) {
      const result = await post(server, body.startsWith('{"track"') ? "Track" : "Batch", body);
      expect(result.json.code, body).toBe("invalid_argument");
    }
  });

  test("deeply nested input and huge strings get a clear error, and the server keeps serving", async ({ server }) => {
    const deep = `{"track":{"userId":"u","event":"E","properties":${'{"a":'.repeat(5000)}1${"}".repeat(5000)}}}`;
    const nested = await post(server, "Track", deep);
    expect(nested.json.code).toBe("invalid_argument");
    const huge = await post(server, "Track", JSON.stringify({ track: { userId: "u".repeat(2000), event: "E" } }));
    expect(huge.json.code).toBe("invalid_argument");
    expect(huge.json.message).toContain("userId");
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(200);
  });
});

describe("protocols on one port", () => {
  test("gRPC over h2c and gRPC-Web over HTTP/1.1 reach the same service", async ({ server }) => {
    const headers = { authorization: `Bearer ${source.writeKey}` };
    const grpc = createClient(TrackingService, createGrpcTransport({ baseUrl: server.url }));
    const viaGrpc = await grpc.track({ track: { userId: "u", event: "via grpc" } }, { headers });
    const grpcWeb = createClient(TrackingService, createGrpcWebTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    const viaWeb = await grpcWeb.track({ track: { userId: "u", event: "via grpc-web" } }, { headers });
    const stored = await server.pool.query("SELECT count(*)::int AS n FROM messages WHERE message_id = ANY($1)", [
      [viaGrpc.messageId, viaWeb.messageId],
    ]);
    expect(stored.rows[0].n).toBe(2);
  });
});
