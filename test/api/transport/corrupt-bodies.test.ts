import http2 from "node:http2";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startTestServer, type TestServer } from "../../helpers/server.js";

let server: TestServer;
let writeKey: string;

beforeAll(async () => {
  server = await startTestServer();
  writeKey = (await server.createSource()).writeKey;
});
afterAll(async () => {
  await server?.stop();
});

/** Field 1 (track), length-delimited, claiming 100 bytes but carrying 2: not valid protobuf. */
const corruptProto = Buffer.from([0x0a, 0x64, 0x0a, 0x01]);
/** A wire type that does not exist (7). */
const badWireType = Buffer.from([0x0f, 0x00]);
const truncatedGzip = gzipSync(Buffer.from('{"track":{"userId":"u","event":"e"}}')).subarray(0, 12);

function envelope(message: Buffer, flags = 0): Buffer {
  const header = Buffer.alloc(5);
  header[0] = flags;
  header.writeUInt32BE(message.length, 1);
  return Buffer.concat([header, message]);
}

async function connectUnary(body: Buffer, headers: Record<string, string>) {
  const response = await fetch(`${server.url}/waypost.v1.TrackingService/Track`, {
    method: "POST",
    headers: { authorization: `Bearer ${writeKey}`, ...headers },
    body: new Uint8Array(body),
  });
  return { status: response.status, json: (await response.json()) as { code: string; message: string } };
}

describe("Connect unary", () => {
  test.each([
    ["a truncated message", corruptProto, {}],
    ["an unknown wire type", badWireType, {}],
    ["garbage labelled gzip", Buffer.from("this is not gzip at all"), { "content-encoding": "gzip" }],
    ["truncated gzip", truncatedGzip, { "content-encoding": "gzip" }],
  ])("%s is invalid_argument (400), not internal", async (_name, body, extra) => {
    const answer = await connectUnary(body, { "content-type": "application/proto", ...extra });
    expect(answer.status).toBe(400);
    expect(answer.json.code).toBe("invalid_argument");
  });

  test("corrupt gzip on an admin RPC is invalid_argument too", async () => {
    const response = await fetch(`${server.url}/waypost.v1.SourceService/ListSources`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.adminToken}`, "content-type": "application/json", "content-encoding": "gzip" },
      body: new Uint8Array(truncatedGzip),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { code: string }).code).toBe("invalid_argument");
  });
});

/** One gRPC call over h2c with a raw body; resolves with the status trailers. */
function grpcCall(
  path: string,
  body: Buffer,
  headers: Record<string, string> = {},
  end = true,
): Promise<{ status: string | undefined; message: string | undefined; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(server.url);
    session.on("error", reject);
    const stream = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc+proto",
      te: "trailers",
      authorization: `Bearer ${writeKey}`,
      ...headers,
    });
    let status: string | undefined;
    let message: string | undefined;
    const take = (h: http2.IncomingHttpHeaders) => {
      if (h["grpc-status"] !== undefined) status = String(h["grpc-status"]);
      if (h["grpc-message"] !== undefined) message = decodeURIComponent(String(h["grpc-message"]));
    };
    stream.on("response", take);
    stream.on("trailers", take);
    stream.on("error", () => {});
    stream.resume();
    stream.on("close", () => {
      session.close();
      resolve({ status, message, closed: true });
    });
    if (end) stream.end(body);
    else stream.write(body);
  });
}

describe("gRPC", () => {
  test("a corrupt message is grpc-status 3 (invalid argument)", async () => {
    const answer = await grpcCall("/waypost.v1.TrackingService/Track", envelope(corruptProto));
    expect(answer.status).toBe("3");
  });

  test("corrupt compressed message is grpc-status 3", async () => {
    const answer = await grpcCall("/waypost.v1.TrackingService/Track", envelope(Buffer.from("not gzip"), 1), {
      "grpc-encoding": "gzip",
    });
    expect(answer.status).toBe("3");
  });

  test("a message over the read limit ends the call and resets the stream, so a client still sending does not hang", async () => {
    // Announce 10 MB, send 64 KB of it, and keep the stream open like a slow uploader.
    const header = Buffer.alloc(5);
    header.writeUInt32BE(10 * 1024 * 1024, 1);
    const answer = await grpcCall("/waypost.v1.TrackingService/Batch", Buffer.concat([header, Buffer.alloc(64 * 1024)]), {}, false);
    expect(answer.closed).toBe(true);
    expect(answer.status).toBe("8"); // resource exhausted
  }, 10_000);
});

test("gRPC-Web: a corrupt message is reported as invalid argument in the trailer frame", async () => {
  const response = await fetch(`${server.url}/waypost.v1.TrackingService/Track`, {
    method: "POST",
    headers: { authorization: `Bearer ${writeKey}`, "content-type": "application/grpc-web+proto" },
    body: new Uint8Array(envelope(corruptProto)),
  });
  const body = Buffer.from(await response.arrayBuffer());
  expect(body.toString()).toMatch(/grpc-status: ?3/);
});

test("Connect streaming: a corrupt message ends the stream with invalid_argument", async () => {
  const response = await fetch(`${server.url}/waypost.v1.AudienceService/StreamSyncAudience`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.adminToken}`, "content-type": "application/connect+proto" },
    body: new Uint8Array(envelope(corruptProto)),
  });
  const body = Buffer.from(await response.arrayBuffer());
  expect(body.subarray(5).toString()).toContain('"code":"invalid_argument"');
});
