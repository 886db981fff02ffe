import http from "node:http";
import { gzipSync } from "node:zlib";
import { ConnectError, Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { RequestTooLargeSchema } from "../../../gen/waypost/v1/tracking_pb.js";
import { limits } from "../../../src/ingest/limits.js";
import { startTestServer, type TestServer } from "../../helpers/server.js";

/**
 * A tracking request over the size limit fails with resource_exhausted and a
 * RequestTooLarge detail, however the body arrives: with a Content-Length,
 * chunked, or compressed. Clients split on the detail, never on the text.
 */
let server: TestServer;
let writeKey: string;
beforeAll(async () => {
  server = await startTestServer();
  ({ writeKey } = await server.createSource("sizes"));
});
afterAll(async () => {
  await server?.stop();
});

const oversized = () =>
  JSON.stringify({
    batch: Array.from({ length: 30 }, (_, i) => ({ track: { userId: "u", event: `e${i}`, properties: { pad: "y".repeat(20_000) } } })),
  });

interface ErrorBody {
  code?: string;
  message?: string;
  details?: Array<{ type: string; value: string }>;
}

function expectTooLarge(status: number, body: ErrorBody) {
  expect(status).toBe(429);
  expect(body.code).toBe("resource_exhausted");
  expect(body.details?.map((d) => d.type)).toEqual(["waypost.v1.RequestTooLarge"]);
}

/** A raw request over Node's http, so the body can be chunked or held back. */
function rawPost(options: {
  headers: Record<string, string>;
  chunks: Buffer[];
  endBody: boolean;
}): Promise<{ status: number; body: ErrorBody }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${server.url}/waypost.v1.TrackingService/Batch`,
      // A connection of its own: one whose body was cut short cannot be reused.
      {
        method: "POST",
        agent: false,
        headers: { "content-type": "application/json", authorization: `Bearer ${writeKey}`, ...options.headers },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d) => (text += d));
        res.on("end", () => {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as ErrorBody });
          req.destroy();
        });
      },
    );
    req.on("error", reject);
    for (const chunk of options.chunks) req.write(chunk);
    if (options.endBody) req.end();
    else req.flushHeaders();
  });
}

describe("a tracking request over the size limit", () => {
  test("through a Connect client: resource_exhausted with the limit in a RequestTooLarge detail", async () => {
    const client = server.tracking(writeKey);
    const calls = JSON.parse(oversized()).batch.map((c: { track: object }) => ({ type: { case: "track", value: c.track } }));
    const error = await client.batch({ batch: calls }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConnectError);
    const connectError = error as ConnectError;
    expect(connectError.code).toBe(Code.ResourceExhausted);
    const [detail] = connectError.findDetails(RequestTooLargeSchema);
    expect(detail?.limitBytes).toBe(BigInt(limits.maxRequestBytes));
  });

  test("chunked, with no Content-Length: refused once the count passes the limit", async () => {
    const body = Buffer.from(oversized());
    const chunks = [body.subarray(0, 100_000), body.subarray(100_000, 300_000), body.subarray(300_000)];
    const { status, body: answer } = await rawPost({ headers: {}, chunks, endBody: true });
    expectTooLarge(status, answer);
  });

  test("a declared Content-Length over the limit is refused before the body is sent", async () => {
    // Only the headers go out; the answer comes without waiting for 10 MB.
    const { status, body } = await rawPost({ headers: { "content-length": String(10 * 1024 * 1024) }, chunks: [], endBody: false });
    expectTooLarge(status, body);
  });

  test("gzip that inflates past the limit is refused with the same detail", async () => {
    const compressed = gzipSync(Buffer.from(oversized()));
    expect(compressed.length).toBeLessThan(limits.maxRequestBytes);
    const { status, body } = await rawPost({ headers: { "content-encoding": "gzip" }, chunks: [compressed], endBody: true });
    expectTooLarge(status, body);
  });

  test("(control) a request under the limit, gzip or not, is accepted", async () => {
    const small = JSON.stringify({ batch: [{ track: { userId: "u", event: "small" } }] });
    for (const [headers, chunk] of [
      [{}, Buffer.from(small)],
      [{ "content-encoding": "gzip" }, gzipSync(small)],
    ] as const) {
      const { status, body } = await rawPost({ headers: { ...headers }, chunks: [chunk], endBody: true });
      expect(status).toBe(200);
      expect(body).toMatchObject({ accepted: 1 });
    }
  });
});
