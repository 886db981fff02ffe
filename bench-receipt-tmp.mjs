import { createHash, createHmac, randomBytes, randomUUID } from "node:crypto";
import { Pool as HttpPool } from "undici";
const root = "/work/wt-hook-receipt/dist/src/";
const { startWaypost } = await import(root + "server.js");
const { loadConfig } = await import(root + "config.js");
const { createLogger } = await import(root + "logger.js");
const config = loadConfig({ DATABASE_URL: "postgres://postgres@127.0.0.1:5432/bench_receipt", PORT: "0", HOST: "127.0.0.1", WAYPOST_ADMIN_TOKEN: "bench-admin-token-0123456789", WAYPOST_DATA_DIR: "/tmp/bench-receipt-data", WAYPOST_LOG_LEVEL: "warn", WAYPOST_ROLE: "api" });
const waypost = await startWaypost({ config, logger: createLogger("warn") });
const secret = "whsec_bench";
const token = randomBytes(32).toString("base64url");
const id = randomUUID();
await waypost.pool.query("INSERT INTO sources (id, name, write_key_hash, kind, webhook, hook_token_hash) VALUES ($1,'bench',$2,'webhook',$3,$4)",
  [id, randomBytes(32), JSON.stringify({ verifier: "stripe", secret, transform: "", idempotencyKey: "", response: { status: 200, contentType: "application/json", body: '{"accepted":true}' }, tokenHeader: "", maxRequestsPerSecond: 0 }), createHash("sha256").update(token).digest()]);
const http = new HttpPool(waypost.url, { connections: 64, pipelining: 1 });
const total = Number(process.env.N ?? 20000);
const pad = "x".repeat(1500);
let next = 0, ok = 0, other = 0;
async function worker() {
  while (next < total) {
    const n = next++;
    const body = JSON.stringify({ id: `evt_${n}`, type: "payment_intent.succeeded", data: { object: { id: `pi_${n}`, pad } } });
    const t = Math.floor(Date.now() / 1000);
    const sig = createHmac("sha256", secret).update(`${t}.${body}`).digest("hex");
    const res = await http.request({ path: `/hooks/${token}`, method: "POST", headers: { "content-type": "application/json", "stripe-signature": `t=${t},v1=${sig}` }, body });
    await res.body.text();
    if (res.statusCode === 200) ok++; else other++;
  }
}
const started = performance.now();
await Promise.all(Array.from({ length: 64 }, worker));
const seconds = (performance.now() - started) / 1000;
const { rows } = await waypost.pool.query("SELECT count(*)::int n FROM hook_requests WHERE source_id=$1 AND status='pending'", [id]);
console.log(JSON.stringify({ total, ok, other, seconds: seconds.toFixed(2), perSecond: Math.round(total / seconds), stored: rows[0].n }));
await http.close();
await waypost.stop();
