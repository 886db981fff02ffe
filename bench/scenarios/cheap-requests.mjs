// @ts-check
import { gzipSync } from "node:zlib";
import { createSourceAndDestination } from "../lib/admin.mjs";
import { cpuSeconds } from "../lib/cpu.mjs";
import { startService } from "../lib/service.mjs";
import { report } from "../lib/stats.mjs";
import { checkTarget } from "../lib/targets.mjs";

// The requests test/compat/cheap-requests.test.ts sends, whose cost it used
// to bound in CPU time: too many messages refused whole, and a full batch of
// invalid messages under the cap. A unit test on a busy machine cannot bound
// CPU time; here the API runs as its own process and the cost per request is
// its CPU time (from /proc, 10 ms ticks) over many requests.
const maxBatchMessages = 2_500;
const maxRequestBytes = 500 * 1024;

/** @typedef {{ name: string, path: string, auth: "basic" | "bearer", body: Buffer, headers: Record<string, string> }} CheapRequest */

/** @returns {CheapRequest[]} */
function cases() {
  const count = Math.floor((maxRequestBytes - 20) / 3);
  const compatOver = Buffer.from(`{"batch":[${Array.from({ length: count }, () => "{}").join(",")}]}`);
  const compatFull = Buffer.from(
    JSON.stringify({ batch: [{ type: "track", userId: "u", event: "fine" }, ...Array.from({ length: maxBatchMessages - 1 }, () => ({}))] }),
  );
  const binary = Buffer.alloc(maxRequestBytes);
  for (let i = 0; i < binary.length; i += 2) binary[i] = 0x0a;
  const json = Buffer.from(`{"batch":[${Array.from({ length: 160_000 }, () => "{}").join(",")}]}`);
  /** @param {Buffer} message */
  const envelope = (message) => {
    const header = Buffer.alloc(5);
    header.writeUInt32BE(message.length, 1);
    return Buffer.concat([header, message]);
  };
  const rpc = "/waypost.v1.TrackingService/Batch";
  return [
    {
      name: "compat JSON, 500 KB, over the message cap",
      path: "/v1/batch",
      auth: "basic",
      body: compatOver,
      headers: { "content-type": "application/json" },
    },
    {
      name: "compat JSON, 2,500 invalid messages",
      path: "/v1/batch",
      auth: "basic",
      body: compatFull,
      headers: { "content-type": "application/json" },
    },
    { name: "Connect binary, 500 KB", path: rpc, auth: "bearer", body: binary, headers: { "content-type": "application/proto" } },
    { name: "Connect JSON, 500 KB", path: rpc, auth: "bearer", body: json, headers: { "content-type": "application/json" } },
    {
      name: "Connect JSON gzip, 500 KB",
      path: rpc,
      auth: "bearer",
      body: gzipSync(json),
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
    },
    {
      name: "gRPC-Web binary, 500 KB",
      path: rpc,
      auth: "bearer",
      body: envelope(binary.subarray(0, binary.length - 6)),
      headers: { "content-type": "application/grpc-web+proto" },
    },
  ];
}

/**
 * Server CPU per refused (or mostly refused) request, one line per kind of request.
 * @param {{ db: import("../lib/postgres.mjs").Database, sink: import("../lib/sink.mjs").Sink, quick: boolean }} options
 */
export async function cheapRequestsScenario({ db, sink, quick }) {
  const service = await startService(db.url, { WAYPOST_ROLE: "api" });
  try {
    const { source } = await createSourceAndDestination(service.url, `${sink.url}/ok`, { name: "cheap-requests" });
    const authorization = {
      basic: `Basic ${Buffer.from(`${source.writeKey}:`).toString("base64")}`,
      bearer: `Bearer ${source.writeKey}`,
    };
    const requests = quick ? 10 : 50;
    for (const c of cases()) {
      const send = async () => {
        const response = await fetch(`${service.url}${c.path}`, {
          method: "POST",
          headers: { ...c.headers, authorization: authorization[c.auth] },
          body: new Uint8Array(c.body),
        });
        await response.arrayBuffer();
        return response.status;
      };
      await send(); // warm up the code paths
      const before = cpuSeconds(service.pid);
      const startedAt = performance.now();
      let status;
      for (let i = 0; i < requests; i++) status = await send();
      const elapsedMs = performance.now() - startedAt;
      const after = cpuSeconds(service.pid);
      const cpuMs = before === undefined || after === undefined ? null : Math.round((((after - before) * 1000) / requests) * 10) / 10;
      report({
        scenario: "cheap-requests",
        case: c.name,
        request_kb: Math.round(c.body.length / 1024),
        requests,
        status,
        server_cpu_ms_per_request: cpuMs,
        wall_ms_per_request: Math.round((elapsedMs / requests) * 10) / 10,
        target_cpu_ms: 100,
        met: checkTarget(`cheap request CPU ms: ${c.name}`, cpuMs, 100, { atMost: true }).met,
      });
    }
  } finally {
    await service.stop();
  }
}
