import http from "node:http";
import { gzipSync } from "node:zlib";
import { describe, expect } from "vitest";
import { limits } from "../../src/ingest/limits.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";
import { basicAuth, storedMessageIds } from "./support.js";

const test = testWith();
let source: { id: string; writeKey: string };

test.beforeAll(async ({ server }) => {
  source = await server.createSource();
});

function postRaw(server: TestServer, body: string): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${server.url}/v1/batch`,
      {
        method: "POST",
        headers: {
          authorization: basicAuth(source.writeKey),
          "content-type": "application/json",
          "content-length": String(Buffer.byteLength(body)),
        },
      },
      (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => (text += chunk.toString()));
        res.on("end", () => resolve({ status: res.statusCode!, json: JSON.parse(text) }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/**
 * The messages the server validated while `run` was in flight, accepted or
 * rejected: the work a request caused, counted rather than timed (CPU time
 * on a busy machine says little; bench/ measures it: `npm run bench --
 * --only=cheap-requests`).
 */
async function validated<T>(server: TestServer, run: () => Promise<T>): Promise<{ result: T; accepted: number; rejected: number }> {
  const count = async () => {
    const { callsAccepted, callsRejected } = server.waypost.metrics;
    const sum = async (counter: typeof callsAccepted) => (await counter.get()).values.reduce((total, v) => total + v.value, 0);
    return { accepted: await sum(callsAccepted), rejected: await sum(callsRejected) };
  };
  const before = await count();
  const result = await run();
  const after = await count();
  return { result, accepted: after.accepted - before.accepted, rejected: after.rejected - before.rejected };
}

test("a 500 KB batch of invalid messages is refused whole, before any message is validated", async ({ server }) => {
  // `{}` is 2 bytes plus a comma: about 170,000 messages in 500 KB.
  const count = Math.floor((limits.maxRequestBytes - 20) / 3);
  const body = `{"batch":[${Array.from({ length: count }, () => "{}").join(",")}]}`;
  expect(Buffer.byteLength(body)).toBeGreaterThan(500_000);
  await postRaw(server, '{"batch":[{}]}'); // warm up the code paths
  const { result, accepted, rejected } = await validated(server, () => postRaw(server, body));
  expect(result.status).toBe(400);
  expect(result.json.code).toBe("invalid_request");
  expect(result.json.message).toContain(`batch has ${count} messages, over the limit of ${limits.maxBatchMessages}`);
  expect({ accepted, rejected }).toEqual({ accepted: 0, rejected: 0 });
});

test("a full batch of invalid messages under the cap stores its one valid message and lists 100 of its rejections", async ({ server }) => {
  const body = JSON.stringify({
    batch: [
      { type: "track", userId: "u", event: "fine", messageId: "cheap-ok" },
      ...Array.from({ length: limits.maxBatchMessages - 1 }, () => ({})),
    ],
  });
  const { result, accepted, rejected } = await validated(server, () => postRaw(server, body));
  expect(result.status).toBe(200);
  expect(result.json).toMatchObject({ success: true, accepted: 1, rejectedCount: limits.maxBatchMessages - 1 });
  expect(result.json.rejected).toHaveLength(limits.maxListedRejections);
  expect(result.json.rejected[0]).toEqual({ index: 1, field: "type", reason: expect.stringContaining("type is required") });
  // The HTTP API answers its rejections itself; only the valid message reaches the ingestor.
  expect({ accepted, rejected }).toEqual({ accepted: 1, rejected: 0 });
  expect(await storedMessageIds(server, source.id)).toContain("cheap-ok");
});

test("the Connect Batch RPC caps messages per request and lists at most 100 rejections with their count", async ({ server }) => {
  const tracking = server.tracking(source.writeKey);
  const invalid = Array.from({ length: 300 }, () => ({ type: { case: "track" as const, value: { event: "no user" } } }));
  const response = await tracking.batch({
    batch: [{ type: { case: "track", value: { userId: "u", event: "ok", messageId: "rpc-cheap-ok" } } }, ...invalid],
  });
  expect(response.accepted).toBe(1);
  expect(response.rejectedCount).toBe(300);
  expect(response.rejected).toHaveLength(100);
  expect(response.rejected[0]!.index).toBe(1);
  const tooMany = Array.from({ length: limits.maxBatchMessages + 1 }, () => ({
    type: { case: "track" as const, value: { userId: "u", event: "e" } },
  }));
  await expect(tracking.batch({ batch: tooMany })).rejects.toThrow(/over the limit of 2500/);
});

describe("a 500 KB Connect Batch of empty messages is refused before it is decoded", () => {
  async function rpc(server: TestServer, body: Buffer, headers: Record<string, string>) {
    const response = await fetch(`${server.url}/waypost.v1.TrackingService/Batch`, {
      method: "POST",
      headers: { authorization: `Bearer ${source.writeKey}`, ...headers },
      body: new Uint8Array(body),
    });
    // gRPC-Web trailers percent-encode their message.
    return { status: response.status, text: decodeURIComponent(Buffer.from(await response.arrayBuffer()).toString("latin1")) };
  }
  // Binary: field 1, length 0, repeated: 2 bytes per message.
  const binary = Buffer.alloc(500 * 1024);
  for (let i = 0; i < binary.length; i += 2) binary[i] = 0x0a;
  const json = Buffer.from(`{"batch":[${Array.from({ length: 160_000 }, () => "{}").join(",")}]}`);
  const envelope = (message: Buffer) => {
    const header = Buffer.alloc(5);
    header.writeUInt32BE(message.length, 1);
    return Buffer.concat([header, message]);
  };

  test.for([
    ["Connect binary", binary, { "content-type": "application/proto" }],
    ["Connect JSON", json, { "content-type": "application/json" }],
    ["Connect JSON, gzip", gzipSync(json), { "content-type": "application/json", "content-encoding": "gzip" }],
    // The envelope's 5 bytes stay inside the 500 KB request limit, so the message count is what refuses it.
    ["gRPC-Web binary", envelope(binary.subarray(0, binary.length - 6)), { "content-type": "application/grpc-web+proto" }],
  ] as const)("%s: invalid_argument, no message validated", async ([_name, body, headers], { server }) => {
    const { result, accepted, rejected } = await validated(server, () => rpc(server, body, headers));
    expect(result.text).toMatch(/invalid_argument|grpc-status: ?3/);
    expect(result.text).toContain("over the limit of 2500");
    expect({ accepted, rejected }).toEqual({ accepted: 0, rejected: 0 });
  });
});
