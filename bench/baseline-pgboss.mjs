// Baseline: the same delivery work driven by pg-boss. Usage:
//   node bench/baseline-pgboss.mjs DATABASE_URL SINK_URL COUNT CONCURRENCY
// CONCURRENCY is split into workers of 8-job batches (pg-boss works in batches).
import { createHmac } from "node:crypto";
import PgBoss from "pg-boss";
import { Pool as HttpPool } from "undici";
import { benchBody } from "./lib/queue.mjs";

const [url, sinkUrl, countArg, concurrencyArg] = process.argv.slice(2);
const count = Number(countArg);
const concurrency = Number(concurrencyArg);
const http = new HttpPool(sinkUrl, { connections: concurrency });

const boss = new PgBoss({ connectionString: url, max: 20, supervise: false, schedule: false });
boss.on("error", (error) => process.stderr.write(`pg-boss: ${error.message}\n`));
await boss.start();
await boss.createQueue("deliver");
for (let start = 0; start < count; start += 5_000) {
  const jobs = [];
  for (let i = start; i < Math.min(count, start + 5_000); i++) jobs.push({ name: "deliver", data: { body: benchBody(i) } });
  await boss.insert(jobs);
}

let done = 0;
let finish;
const finished = new Promise((resolve) => (finish = resolve));
const batchSize = 8;
const startedAt = performance.now();
for (let w = 0; w < Math.max(1, Math.floor(concurrency / batchSize)); w++) {
  await boss.work("deliver", { batchSize, pollingIntervalSeconds: 0.5 }, async (jobs) => {
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
    done += jobs.length;
    if (done >= count) finish(performance.now());
  });
}
const endedAt = await finished;
await boss.stop({ graceful: false, wait: false }).catch(() => {});
await http.close();
process.stdout.write(JSON.stringify({ queue: "pg-boss", jobs: count, elapsed_ms: Math.round(endedAt - startedAt), per_s: Math.round((count / (endedAt - startedAt)) * 1000) }) + "\n");
process.exit(0);
