// @ts-check
// Baseline: the same delivery work driven by graphile-worker. Usage:
//   node bench/baseline-graphile.mjs DATABASE_URL SINK_URL COUNT CONCURRENCY
// Prints one JSON line. Jobs are added first (not timed); the clock runs from
// starting the worker until every job's POST has been answered.
import { createHmac } from "node:crypto";
import { Logger, makeWorkerUtils, run } from "graphile-worker";
import { Pool as HttpPool } from "undici";
import { benchBody } from "./lib/queue.mjs";

const [url, sinkUrl, countArg, concurrencyArg, maxSecondsArg] = process.argv.slice(2);
// A queue slower than this is measured over this long, not to the end.
const maxMs = Number(maxSecondsArg ?? 180) * 1000;
const count = Number(countArg);
const concurrency = Number(concurrencyArg);
if (!url || !sinkUrl) throw new Error("usage: node bench/baseline-graphile.mjs DATABASE_URL SINK_URL COUNT CONCURRENCY");
const http = new HttpPool(sinkUrl, { connections: concurrency });

// Its default logger writes a line per job to stdout; keep stdout for the result.
const logger = new Logger(() => () => {});
const utils = await makeWorkerUtils({ connectionString: url, logger });
await utils.migrate();
for (let start = 0; start < count; start += 5_000) {
  const specs = [];
  for (let i = start; i < Math.min(count, start + 5_000); i++) specs.push({ identifier: "deliver", payload: { body: benchBody(i) } });
  await utils.addJobs(specs);
}
await utils.release();

let done = 0;
/** @type {(at: number) => void} */
let finish = () => {};
/** @type {Promise<number>} */
const finished = new Promise((resolve) => (finish = resolve));
const startedAt = performance.now();
const runner = await run({
  connectionString: url,
  concurrency,
  maxPoolSize: Math.min(concurrency + 2, 30),
  noHandleSignals: true,
  pollInterval: 1000,
  logger,
  taskList: {
    async deliver(payload) {
      const { body } = /** @type {{ body: string }} */ (payload);
      const signature = createHmac("sha1", "bench-secret").update(body).digest("hex");
      const response = await http.request({
        path: "/ok",
        method: "POST",
        body,
        headers: { "content-type": "application/json", "user-agent": "Waypost/1.0", "x-signature": signature },
      });
      await response.body.dump();
      if (response.statusCode >= 300) throw new Error(`status ${response.statusCode}`);
      if (++done === count) finish(performance.now());
    },
  },
});
const endedAt = await Promise.race([
  finished,
  new Promise((/** @type {(at: number) => void} */ resolve) => setTimeout(() => resolve(performance.now()), maxMs)),
]);
await runner.stop();
await http.close();
process.stdout.write(
  `${JSON.stringify({
    queue: "graphile-worker",
    jobs: count,
    done,
    elapsed_ms: Math.round(endedAt - startedAt),
    per_s: Math.round((done / (endedAt - startedAt)) * 1000),
  })}\n`,
);
process.exit(0);
