import { fromBinary, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { describe, expect } from "vitest";
import { BatchRequestSchema, TrackingService, type MessageSchema } from "../../gen/waypost/v1/tracking_pb.js";
import { testWith } from "../helpers/fixtures.js";
import type { TestServer } from "../helpers/server.js";

/**
 * Binary tracking requests are decoded with wire-compatible messages whose
 * Structs go straight to JSON text; JSON requests take the public messages.
 * Both must store the same bodies and answer the same.
 */

const test = testWith();
let source: { id: string; writeKey: string };

test.beforeAll(async ({ server }) => {
  source = await server.createSource("wire");
});

const properties: JsonObject = {
  b: 1,
  "10": "ten",
  "2": "two",
  a: [true, null, -0, 1e21, 5e-324, "😀 é 日本", { "": "empty key", "\n": "\u2028" }],
  nested: { deeper: { list: [[], {}, [1, [2, [3]]]] } },
};

function batch(prefix: string): { batch: Array<MessageInitShape<typeof MessageSchema>> } {
  const timestamp = { seconds: 1_767_225_600n, nanos: 0 };
  return {
    batch: [
      {
        type: {
          case: "track",
          value: { messageId: `${prefix}-1`, userId: "u1", event: "E", properties, context: { ip: "1.2.3.4" }, timestamp },
        },
      },
      { type: { case: "identify", value: { messageId: `${prefix}-2`, userId: "u1", traits: { name: "N", "7": 7 }, timestamp } } },
      { type: { case: "page", value: { messageId: `${prefix}-3`, anonymousId: "a1", properties: {}, timestamp } } },
      { type: { case: "group", value: { messageId: `${prefix}-4`, userId: "u1", groupId: "g", traits: { ok: ["ok"] }, timestamp } } },
      { type: { case: "track", value: { messageId: `${prefix}-5`, userId: "u1", properties: { x: 1 }, timestamp } } },
      { type: { case: undefined } },
      {
        type: {
          case: "alias",
          value: {
            messageId: `${prefix}-7`,
            userId: "u1",
            previousId: "p",
            context: { "3": [1] },
            integrations: { All: false, Hook: true },
            timestamp,
          },
        },
      },
    ],
  };
}

async function storedBodies(server: TestServer, prefix: string): Promise<string[]> {
  const result = await server.pool.query(
    "SELECT message_id, payload::text AS payload FROM messages WHERE source_id = $1 AND message_id LIKE $2 ORDER BY message_id",
    [source.id, `${prefix}-%`],
  );
  return result.rows.map((row: { message_id: string; payload: string }) => row.payload.replaceAll(prefix, "ID"));
}

describe("binary and JSON requests store the same", () => {
  test("Batch over Connect JSON, Connect binary, gRPC and gRPC-Web", async ({ server }) => {
    const headers = { authorization: `Bearer ${source.writeKey}` };
    const transports: Record<string, Transport> = {
      json: createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }),
      binary: createConnectTransport({ baseUrl: server.url, httpVersion: "2", useBinaryFormat: true }),
      grpc: createGrpcTransport({ baseUrl: server.url }),
      grpcWeb: createGrpcWebTransport({ baseUrl: server.url, httpVersion: "1.1" }),
    };
    const answers: Record<string, unknown> = {};
    const bodies: Record<string, string[]> = {};
    for (const [name, transport] of Object.entries(transports)) {
      const answer = await createClient(TrackingService, transport).batch(batch(name), { headers });
      answers[name] = { ...answer, messageIds: answer.messageIds.map((id) => id.replace(name, "ID")) };
      bodies[name] = await storedBodies(server, name);
    }
    expect(answers.json).toMatchObject({
      accepted: 5,
      rejectedCount: 2,
      rejected: [
        { index: 4, reason: "event is required for track" },
        { index: 5, reason: "message has no call type: set one of identify, track, page, screen, group, alias" },
      ],
    });
    expect(bodies.json).toHaveLength(5);
    expect(bodies.json![0]).toContain('"properties":{"2":"two","10":"ten","b":1,"a":[true,null,0,1e+21,5e-324,');
    for (const name of ["binary", "grpc", "grpcWeb"]) {
      expect(answers[name], name).toEqual(answers.json);
      expect(bodies[name], name).toEqual(bodies.json);
    }
  });
});

describe("a call with unstorable text", () => {
  test("is rejected with the same path whichever the encoding, and its batch neighbours are stored", async ({ server }) => {
    const headers = { authorization: `Bearer ${source.writeKey}` };
    const results: Record<string, unknown> = {};
    for (const [name, useBinaryFormat] of [
      ["nul-json", false],
      ["nul-binary", true],
    ] as const) {
      const client = createClient(TrackingService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1", useBinaryFormat }));
      const { batch: calls } = batch(name);
      calls[3] = {
        type: { case: "group", value: { messageId: `${name}-4`, userId: "u1", groupId: "g", traits: { bad: ["ok", "nul\u0000"] } } },
      };
      const answer = await client.batch({ batch: calls }, { headers });
      results[name] = { rejected: answer.rejected, accepted: answer.accepted, bodies: await storedBodies(server, name) };
    }
    expect(results["nul-json"]).toMatchObject({
      accepted: 4,
      rejected: [
        { index: 3, reason: "traits.bad[1] must not contain NUL characters or unpaired UTF-16 surrogates" },
        { index: 4 },
        { index: 5 },
      ],
    });
    expect(results["nul-binary"]).toEqual(results["nul-json"]);
  });
});

/** A Connect binary (application/proto) call with a body a typed client would not write. */
async function postBinary(server: TestServer, method: string, body: Uint8Array) {
  const response = await fetch(`${server.url}/waypost.v1.TrackingService/${method}`, {
    method: "POST",
    headers: { "content-type": "application/proto", authorization: `Bearer ${source.writeKey}` },
    body: Buffer.from(body),
  });
  return { status: response.status, body: new Uint8Array(await response.arrayBuffer()) };
}

function batchOfTrack(messageId: string, properties: Uint8Array): Uint8Array {
  const track = new BinaryWriter()
    .tag(1, 2)
    .string(messageId)
    .tag(2, 2)
    .string("u")
    .tag(7, 2)
    .string("E")
    .tag(8, 2)
    .bytes(properties)
    .finish();
  return new BinaryWriter().tag(1, 2).bytes(new BinaryWriter().tag(2, 2).bytes(track).finish()).finish();
}

function entry(key: string, value: Uint8Array): Uint8Array {
  return new BinaryWriter().tag(1, 2).string(key).tag(2, 2).bytes(value).finish();
}

describe("binary requests a typed client would not write", () => {
  test("NaN, Infinity and duplicate keys are stored as protobuf-es decodes them", async ({ server }) => {
    const nan = new Uint8Array([0x11, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f]);
    const inf = new Uint8Array([0x11, 0, 0, 0, 0, 0, 0, 0xf0, 0x7f]);
    const struct = new BinaryWriter()
      .tag(1, 2)
      .bytes(entry("n", nan))
      .tag(1, 2)
      .bytes(entry("i", inf))
      .tag(1, 2)
      .bytes(entry("n", new Uint8Array([0x20, 0x01])))
      .finish();
    const answer = await postBinary(server, "Batch", batchOfTrack("raw-nan-1", struct));
    expect(answer.status).toBe(200);
    const [stored] = await storedBodies(server, "raw-nan");
    expect(stored).toContain('"properties":{"n":true,"i":null}');
  });

  test("nesting past protobuf-es's recursion limit is refused whole, with its message", async ({ server }) => {
    let value = new BinaryWriter().tag(3, 2).string("end").finish();
    for (let i = 0; i < 60; i++) {
      const struct = new BinaryWriter().tag(1, 2).bytes(entry("k", value)).finish();
      value = new BinaryWriter().tag(5, 2).bytes(struct).finish();
    }
    const body = batchOfTrack("raw-deep-1", new BinaryWriter().tag(1, 2).bytes(entry("k", value)).finish());
    const expected = (() => {
      try {
        fromBinary(BatchRequestSchema, body);
        return "decoded";
      } catch (error) {
        return `parse binary: ${(error as Error).message}`;
      }
    })();
    expect(expected).toContain("maximum recursion depth");
    const answer = await postBinary(server, "Batch", body);
    expect(answer.status).toBe(400);
    expect(JSON.parse(new TextDecoder().decode(answer.body))).toEqual({ code: "invalid_argument", message: expected });
    expect(await storedBodies(server, "raw-deep")).toEqual([]);
  });

  test("invalid UTF-8 in a Struct string is refused whole", async ({ server }) => {
    const struct = new BinaryWriter()
      .tag(1, 2)
      .bytes(entry("s", new Uint8Array([0x1a, 0x03, 0xed, 0xa0, 0x80])))
      .finish();
    const answer = await postBinary(server, "Batch", batchOfTrack("raw-utf8-1", struct));
    expect(answer.status).toBe(400);
    const error = JSON.parse(new TextDecoder().decode(answer.body)) as { code: string; message: string };
    expect(error.code).toBe("invalid_argument");
    expect(error.message).toMatch(/^parse binary: /);
  });
});
