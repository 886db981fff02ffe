// @ts-check
// Baseline: the same delivery work driven by pg-boss. Usage:
//   node bench/baseline-pgboss.mjs DATABASE_URL SINK_URL COUNT CONCURRENCY
// CONCURRENCY is split into fetch loops of 16-job batches (pg-boss works in batches).
import { createHmac } from "node:crypto";
import PgBoss from "pg-boss";
import { Pool as HttpPool } from "undici";
import { benchBody } from "./lib/queue.mjs";

const [url, sinkUrl, countArg, concurrencyArg, maxSecondsArg] = process.argv.slice(2);
// A queue slower than this is measured over this long, not to the end.
const maxMs = Number(maxSecondsArg ?? 180) * 1000;
const count = Number(countArg);
const concurrency = Number(concurrencyArg);
if (!url || !sinkUrl) throw new Error("usage: node bench/baseline-pgboss.mjs DATABASE_URL SINK_URL COUNT CONCURRENCY");
const http = new HttpPool(sinkUrl, { connections: concurrency });
const batchSize = 16;

const boss = new PgBoss({ connectionString: url, max: 20, supervise: false, schedule: false });
boss.on("error", (error) => process.stderr.write(`pg-boss: ${error.message}\n`));
await boss.start();
await boss.createQueue("deliver");
for (let start = 0; start < count; start += 5_000) {
  const jobs = [];
  for (let i = start; i < Math.min(count, start + 5_000); i++) jobs.push({ name: "deliver", data: { body: benchBody(i) } });
  await boss.insert(jobs);
}

// pg-boss's own work() loop sleeps for its polling interval (at least 0.5 s)
// between fetches even when jobs were found, which caps it at 128 jobs/s at
// this concurrency. The loop below drives it as fast as it goes instead:
// fetch a batch, send it, complete it in one call, repeat.
let done = 0;
const startedAt = performance.now();
await Promise.all(
  Array.from({ length: Math.max(1, Math.floor(concurrency / batchSize)) }, async () => {
    while (performance.now() - startedAt < maxMs) {
      const jobs = await boss.fetch("deliver", { batchSize });
      if (!jobs || jobs.length === 0) {
        if (done >= count) return;
        await new Promise((resolve) => setTimeout(resolve, 20));
        continue;
      }
      await Promise.all(
        jobs.map(async (job) => {
          const signature = createHmac("sha1", "bench-secret").update(job.data.body).digest("hex");
          const response = await http.request({
            path: "/ok",
            method: "POST",
            body: job.data.body,
            headers: { "content-type": "application/json", "user-agent": "Waypost/1.0", "x-signature": signature },
          });
          await response.body.dump();
          if (response.statusCode >= 300) throw new Error(`status ${response.statusCode}`);
        }),
      );
      await boss.complete(
        "deliver",
        jobs.map((job) => job.id),
      );
      done += jobs.length;
    }
  }),
);
const endedAt = performance.now();
await boss.stop({ graceful: false, wait: false }).catch(() => {});
await http.close();
process.stdout.write(
  `${JSON.stringify({
    queue: "pg-boss",
    jobs: count,
    done,
    elapsed_ms: Math.round(endedAt - startedAt),
    per_s: Math.round((done / (endedAt - startedAt)) * 1000),
  })}\n`,
);
process.exit(0);
