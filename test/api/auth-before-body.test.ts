import { readFileSync } from "node:fs";
import http from "node:http";
import { createGzip } from "node:zlib";
import { createClient, Code, ConnectError } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, describe, expect } from "vitest";
import { AudienceService } from "../../gen/waypost/v1/audience_pb.js";
import { SourceService } from "../../gen/waypost/v1/source_pb.js";
import { TrackingService } from "../../gen/waypost/v1/tracking_pb.js";
import { testWith } from "../helpers/fixtures.js";
import { startServiceProcess, type ServiceProcess } from "../helpers/process.js";

const test = testWith();
let service: ServiceProcess;

test.beforeAll(async ({ database }) => {
  service = await startServiceProcess(database.url);
}, 60_000);
afterAll(async () => {
  service?.child.kill("SIGTERM");
  await service?.exited;
});

/** 1 GB of zeros, gzipped (about 1 MB), built by streaming so the test itself stays small. */
async function gzipBomb(): Promise<Buffer> {
  const gzip = createGzip({ level: 9 });
  const chunks: Buffer[] = [];
  gzip.on("data", (chunk: Buffer) => chunks.push(chunk));
  const done = new Promise((resolve) => gzip.on("end", resolve));
  const zeros = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < 1024; i++) {
    if (!gzip.write(zeros)) await new Promise((resolve) => gzip.once("drain", resolve));
  }
  gzip.end();
  await done;
  return Buffer.concat(chunks);
}

/** Resident memory of the service process, from the kernel. */
function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

function rawPost(url: string, headers: Record<string, string>, body: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", headers: { ...headers, "content-length": String(body.length) } }, (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => (text += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("credentials are checked before a body is read", () => {
  test("16 concurrent unauthenticated 1 GB gzip bombs to CreateSource: 401 each, memory grows < 50 MB", async () => {
    const bomb = await gzipBomb();
    expect(bomb.length).toBeGreaterThan(500_000);
    const pid = service.child.pid!;
    const before = rssBytes(pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(pid))), 20);
    const answers = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        rawPost(
          `${service.url}/waypost.v1.SourceService/CreateSource`,
          {
            "content-type": i % 2 === 0 ? "application/proto" : "application/json",
            "content-encoding": "gzip",
            ...(i % 4 === 1 ? { authorization: "Bearer not-the-admin-token-at-all" } : {}),
          },
          bomb,
        ),
      ),
    );
    clearInterval(sampler);
    peak = Math.max(peak, rssBytes(pid));
    for (const answer of answers) {
      expect(answer.status).toBe(401);
      expect(JSON.parse(answer.body).code).toBe("unauthenticated");
    }
    expect(peak - before).toBeLessThan(50 * 1024 * 1024);
  }, 60_000);

  test("an unauthenticated oversized body gets 401, not a size or schema error", async () => {
    const answer = await rawPost(
      `${service.url}/waypost.v1.DestinationService/CreateDestination`,
      { "content-type": "application/json" },
      Buffer.alloc(5 * 1024 * 1024, "x"),
    );
    expect(answer.status).toBe(401);
    expect(JSON.parse(answer.body).code).toBe("unauthenticated");
    const garbage = await rawPost(
      `${service.url}/waypost.v1.SourceService/CreateSource`,
      { "content-type": "application/json", authorization: "Bearer wrong-token-0123456789" },
      Buffer.from("{not json"),
    );
    expect(garbage.status).toBe(401);
  });

  test("an unknown write key on the tracking RPC is refused before the body: 401, not a schema error", async () => {
    const answer = await rawPost(
      `${service.url}/waypost.v1.TrackingService/Track`,
      { "content-type": "application/json", authorization: "Bearer wk_unknown" },
      Buffer.from('{"track":{"no such field":1}}'),
    );
    expect(answer.status).toBe(401);
    expect(JSON.parse(answer.body).code).toBe("unauthenticated");
  });

  test("gRPC, gRPC-Web and Connect streaming clients all see unauthenticated", async () => {
    const transports = [
      createGrpcTransport({ baseUrl: service.url }),
      createGrpcWebTransport({ baseUrl: service.url, httpVersion: "1.1" }),
      createConnectTransport({ baseUrl: service.url, httpVersion: "2" }),
    ];
    for (const transport of transports) {
      const sources = createClient(SourceService, transport);
      const error = await sources.createSource({ source: { name: "x" } }).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(error?.code).toBe(Code.Unauthenticated);
      const tracking = createClient(TrackingService, transport);
      const trackError = await tracking
        .track({ track: { userId: "u", event: "e" } }, { headers: { authorization: "Bearer wk_nope" } })
        .then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
      expect(trackError?.code).toBe(Code.Unauthenticated);
    }
    const streaming = createClient(AudienceService, createConnectTransport({ baseUrl: service.url, httpVersion: "2" }));
    async function* chunks() {
      yield { audienceId: "00000000-0000-0000-0000-000000000000", userIds: ["a"] };
    }
    const streamError = await streaming.streamSyncAudience(chunks() as never).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(streamError?.code).toBe(Code.Unauthenticated);
  });
});
