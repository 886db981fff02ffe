// @ts-check
// The burn-down scenario's same-run baseline: Waypost's delivery work on
// Waypost's own tables with nothing in between (no stages, attempt rows,
// metrics, per-destination caps or retries), made as strong as the
// hardware allows so that the printed ratio is honest:
// - one connection claims batches of 500 due deliveries with their bodies
//   (a lease like the service's: leased_until and lease_token), and claims
//   again as soon as fewer than AHEAD claimed ones wait, so the senders never
//   wait on a claim round trip;
// - `inflight` senders take from that queue, sign (HMAC-SHA1, as the service
//   does) and POST through an undici Pool of `connections` keep-alive connections;
// - a second connection moves them to the history as delivered (fenced by
//   lease_token) in batches of 500, or every 20 ms for a smaller tail;
// - every statement is prepared (named).
//
//   node bench/bare-delivery.mjs DATABASE_URL SINK_URL COUNT [CONNECTIONS=64] [INFLIGHT=256]
//
// Prints one JSON line: `per_s` from start until the last POST was answered
// (as the service's burn-down is timed, to arrival), and when the last was recorded.
import { createHmac } from "node:crypto";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { Pool as HttpPool } from "undici";
import { cpuSeconds } from "./lib/cpu.mjs";

const batch = 500;
const ahead = 1_000;

// Claims by destination over the queue's lane index (destination_id, run_at), as the service does.
const claimStatement = `
  UPDATE delivery_queue d
     SET leased_until = now() + interval '5 minutes', lease_token = d.lease_token + 1
    FROM (SELECT q.destination_id, q.id FROM destinations dst
           CROSS JOIN LATERAL (
             SELECT destination_id, id FROM delivery_queue
              WHERE destination_id = dst.id AND run_at <= now() AND (leased_until IS NULL OR leased_until <= now())
              ORDER BY run_at LIMIT ${batch}
              FOR UPDATE SKIP LOCKED) q
           LIMIT ${batch}) c, messages m
   WHERE d.destination_id = c.destination_id AND d.id = c.id
     AND m.id = d.message_pk
  RETURNING d.destination_id, d.id, d.lease_token, m.payload`;

// A finished delivery leaves the queue for the history, fenced by lease_token.
const doneStatement = `
  WITH gone AS (
    DELETE FROM delivery_queue d
     USING unnest($1::uuid[], $2::bigint[], $3::int[]) AS u(destination_id, id, lease_token)
     WHERE d.destination_id = u.destination_id AND d.id = u.id AND d.lease_token = u.lease_token
    RETURNING d.*
  )
  INSERT INTO delivery_history (destination_id, id, message_pk, source_id, status, created_at, finalized_at, attempt_count,
                                lease_token, first_attempt_at)
  SELECT destination_id, id, message_pk, source_id, 'delivered', created_at, now(), attempt_count + 1,
         lease_token, coalesce(first_attempt_at, now())
    FROM gone`;

/**
 * @param {{ url: string, sinkUrl: string, count: number, connections?: number, inflight?: number, secret?: string, path?: string }} options
 */
export async function bareDelivery({ url, sinkUrl, count, connections = 64, inflight = 256, secret = "bench-secret", path = "/ok" }) {
  const claimer = new pg.Client({ connectionString: url });
  const completer = new pg.Client({ connectionString: url });
  await Promise.all([claimer.connect(), completer.connect()]);
  const http = new HttpPool(sinkUrl, { connections, keepAliveTimeout: 60_000 });
  const headers = (/** @type {string} */ signature) => ({
    "content-type": "application/json",
    "user-agent": "Waypost/1.0",
    "x-signature": signature,
  });

  const backends = await Promise.all([claimer, completer].map(async (c) => (await c.query("SELECT pg_backend_pid() AS pid")).rows[0].pid));
  const backendCpu = () =>
    backends.reduce((sum, pid) => (sum === undefined || cpuSeconds(pid) === undefined ? undefined : sum + cpuSeconds(pid)), 0);
  const state = { posted: 0, recorded: 0, failed: 0, stop: false, lastPostAt: 0 };
  /** @typedef {{ destination_id: string, id: string, lease_token: number, payload: string }} Job */
  /** @type {Job[]} */
  let queue = [];
  let head = 0;
  /** @type {Array<(job: Job | undefined) => void>} */
  const waiters = [];
  /** @type {(() => void) | undefined} */
  let wakeClaimer;
  const take = () => {
    if (head < queue.length) {
      const job = queue[head++];
      if (queue.length - head < ahead && wakeClaimer) {
        wakeClaimer();
        wakeClaimer = undefined;
      }
      return job;
    }
    return new Promise((resolve) => waiters.push(resolve));
  };

  const start = performance.now();
  const cpu0 = process.cpuUsage();
  const postgres0 = backendCpu();
  const claiming = (async () => {
    while (!state.stop) {
      if (queue.length - head >= ahead) {
        await new Promise((resolve) => (wakeClaimer = () => resolve(undefined)));
        continue;
      }
      /** @type {{ rows: Job[] }} */
      const { rows } = await claimer.query({ name: "bare-claim", text: claimStatement });
      if (rows.length === 0) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        continue;
      }
      let i = 0;
      while (waiters.length > 0 && i < rows.length) waiters.shift()?.(rows[i++]);
      queue = queue.slice(head).concat(i > 0 ? rows.slice(i) : rows);
      head = 0;
    }
  })();

  /** @typedef {{ destinations: string[], ids: string[], tokens: number[] }} Completions */
  /** @type {Completions} */
  let pending = { destinations: [], ids: [], tokens: [] };
  let writing = Promise.resolve();
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  const writeBatch = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    const chunk = pending;
    pending = { destinations: [], ids: [], tokens: [] };
    writing = writing.then(async () => {
      const result = await completer.query({
        name: "bare-done",
        text: doneStatement,
        values: [chunk.destinations, chunk.ids, chunk.tokens],
      });
      state.recorded += result.rowCount ?? 0;
    });
  };
  const complete = (/** @type {Job} */ job) => {
    pending.destinations.push(job.destination_id);
    pending.ids.push(job.id);
    pending.tokens.push(job.lease_token);
    if (pending.ids.length >= batch) writeBatch();
    else if (!timer) timer = setTimeout(writeBatch, 20);
  };

  const senders = Array.from({ length: inflight }, async () => {
    while (state.posted + state.failed < count) {
      const job = await take();
      if (job === undefined) return;
      const signature = createHmac("sha1", secret).update(job.payload, "utf8").digest("hex");
      try {
        const response = await http.request({ path, method: "POST", headers: headers(signature), body: job.payload });
        await response.body.dump();
        if (response.statusCode >= 200 && response.statusCode < 300) {
          state.posted++;
          complete(job);
        } else state.failed++;
      } catch {
        state.failed++;
      }
      state.lastPostAt = performance.now();
    }
  });
  // Senders stop by count; release any parked on an empty queue.
  await Promise.race([
    Promise.all(senders),
    (async () => {
      while (state.posted + state.failed < count) await new Promise((resolve) => setTimeout(resolve, 5));
    })(),
  ]);
  const postedAt = state.lastPostAt;
  for (const resolve of waiters.splice(0)) resolve(undefined);
  await Promise.all(senders);
  if (pending.ids.length > 0) writeBatch();
  await writing;
  const recordedAt = performance.now();
  const cpu = process.cpuUsage(cpu0);
  const postgres1 = backendCpu();
  state.stop = true;
  wakeClaimer?.();
  await claiming;
  await Promise.all([claimer.end(), completer.end(), http.close()]);
  return {
    baseline: "bare-delivery",
    deliveries: count,
    per_s: Math.round((state.posted / (postedAt - start)) * 1000),
    all_recorded_after_s: Math.round(recordedAt - start) / 1000,
    recorded: state.recorded,
    failed: state.failed,
    connections,
    inflight,
    script_cpu_us_per_delivery: Math.round((cpu.user + cpu.system) / Math.max(1, state.posted)),
    // Its Postgres backends' CPU, read from /proc (null when Postgres is not on this machine).
    postgres_cpu_us_per_delivery:
      postgres0 === undefined || postgres1 === undefined ? null : Math.round(((postgres1 - postgres0) * 1e6) / Math.max(1, state.posted)),
  };
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
