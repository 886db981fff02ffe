// @ts-check
// The webhook-source scenario's same-run baseline: a bare HTTP server that
// does what the receipt must do and nothing else — read the body, check a
// Stripe signature (HMAC-SHA256 of "t.body", constant-time), insert the raw
// request into hook_requests with one prepared statement per request, and
// answer 200 — loaded by the same client as the service. No token lookup,
// limits, header filtering, idempotency, metrics or rate limit.
//
//   node bench/bare-hook-receipt.mjs DATABASE_URL SOURCE_ID SECRET DURATION_MS [CONCURRENCY=32]
//
// Prints one JSON line: requests accepted per second.
import { createHmac, timingSafeEqual } from "node:crypto";
import http from "node:http";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { postHooks } from "./lib/hook-load.mjs";

/**
 * @param {{ url: string, sourceId: string, secret: string, durationMs: number, concurrency?: number }} options
 */
export async function bareHookReceipt({ url, sourceId, secret, durationMs, concurrency = 32 }) {
  const pool = new pg.Pool({ connectionString: url, max: 8 });
  const server = http.createServer((req, res) => {
    /** @type {Buffer[]} */
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const header = String(req.headers["stripe-signature"] ?? "");
      const t = /t=(\d+)/.exec(header)?.[1];
      const v1 = /v1=([0-9a-f]+)/.exec(header)?.[1] ?? "";
      const expected = createHmac("sha256", secret).update(`${t}.`).update(body).digest();
      const given = Buffer.from(v1, "hex");
      if (!t || given.length !== expected.length || !timingSafeEqual(given, expected)) {
        res.writeHead(401).end();
        return;
      }
      pool
        .query({
          name: "bare-hook-insert",
          text: `INSERT INTO hook_requests (source_id, received_at, method, content_type, headers, body, status)
                 VALUES ($1, now(), 'POST', 'application/json', $2, $3, 'pending')`,
          values: [sourceId, JSON.stringify({ "stripe-signature": header }), body],
        })
        .then(
          () => res.writeHead(200, { "content-type": "application/json" }).end('{"accepted":true}'),
          () => res.writeHead(503).end(),
        );
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(undefined)));
  const port = /** @type {import("node:net").AddressInfo} */ (server.address()).port;
  const result = await postHooks({ url: `http://127.0.0.1:${port}/hooks/bare`, secret, durationMs, concurrency, tag: `bare${Date.now()}` });
  server.close();
  await pool.end();
  return { baseline: "bare-hook-receipt", per_s: Math.round((result.accepted / result.elapsedMs) * 1000), refused: result.refused };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [url, sourceId, secret, durationMs, concurrency] = process.argv.slice(2);
  if (!url || !sourceId || !secret)
    throw new Error("usage: node bench/bare-hook-receipt.mjs DATABASE_URL SOURCE_ID SECRET DURATION_MS [CONCURRENCY=32]");
  const result = await bareHookReceipt({
    url,
    sourceId,
    secret,
    durationMs: Number(durationMs ?? 5000),
    concurrency: Number(concurrency ?? 32),
  });
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
