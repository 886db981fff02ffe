// @ts-check
// The burn-down scenario's same-run baseline: the bare delivery loop
// (bench/lib/bare-loop.mjs: claims of 500 pipelined ahead of the senders,
// completions fenced by lease token in batches of 500 on a second
// connection, prepared statements) with senders that sign (HMAC-SHA1, as the
// service does) and POST through an undici Pool of `connections` keep-alive
// connections.
//
//   node bench/bare-delivery.mjs DATABASE_URL SINK_URL COUNT [CONNECTIONS=64] [INFLIGHT=256]
//
// Prints one JSON line: `per_s` from start until the last POST was answered
// (as the service's burn-down is timed, to arrival), and when the last was recorded.
import { createHmac } from "node:crypto";
import { fileURLToPath } from "node:url";
import { Pool as HttpPool } from "undici";
import { runBareLoop } from "./lib/bare-loop.mjs";

/**
 * @param {{ url: string, sinkUrl: string, count: number, connections?: number, inflight?: number, secret?: string, path?: string }} options
 */
export async function bareDelivery({ url, sinkUrl, count, connections = 64, inflight = 256, secret = "bench-secret", path = "/ok" }) {
  const http = new HttpPool(sinkUrl, { connections, keepAliveTimeout: 60_000 });
  const headers = (/** @type {string} */ signature) => ({
    "content-type": "application/json",
    "user-agent": "Waypost/1.0",
    "x-signature": signature,
  });
  try {
    const result = await runBareLoop({
      url,
      count,
      inflight,
      async send(job) {
        const signature = createHmac("sha1", secret).update(job.payload, "utf8").digest("hex");
        const response = await http.request({ path, method: "POST", headers: headers(signature), body: job.payload });
        await response.body.dump();
        return response.statusCode >= 200 && response.statusCode < 300;
      },
    });
    return { baseline: "bare-delivery", ...result, connections };
  } finally {
    await http.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [url, sinkUrl, count, connections, inflight] = process.argv.slice(2);
  if (!url || !sinkUrl) throw new Error("usage: node bench/bare-delivery.mjs DATABASE_URL SINK_URL COUNT [CONNECTIONS=64] [INFLIGHT=256]");
  const result = await bareDelivery({
    url,
    sinkUrl,
    count: Number(count),
    connections: Number(connections ?? 64),
    inflight: Number(inflight ?? 256),
  });
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
