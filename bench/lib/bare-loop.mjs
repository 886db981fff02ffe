// @ts-check
// The bare delivery loop the burn-down and broker baselines share: Waypost's
// delivery work on Waypost's own tables with nothing in between (no stages,
// attempt rows, metrics, per-destination caps or retries), made as strong as
// the hardware allows so that the ratio printed beside the service's rate is
// honest:
// - one connection claims batches of 500 due deliveries with their bodies
//   (a lease like the service's: leased_until and lease_token), and claims
//   again as soon as fewer than AHEAD claimed ones wait, so the senders never
//   wait on a claim round trip;
// - `inflight` senders take from that queue and hand each job to `send`;
// - a second connection moves them to the history as delivered (fenced by
//   lease_token) in batches of 500, or every 20 ms for a smaller tail;
// - every statement is prepared (named).
import pg from "pg";
import { cpuSeconds } from "./cpu.mjs";

const batch = 500;
const ahead = 1_000;

/**
 * Claims up to `limit` due deliveries by destination over the queue's lane index (destination_id, run_at), as the service does;
 * with `oneDestination`, only those of the destination given as $1.
 * @param {number} limit
 * @param {{ oneDestination?: boolean }} [options]
 */
export const claimStatement = (limit, { oneDestination = false } = {}) => `
  UPDATE delivery_queue d
     SET leased_until = now() + interval '5 minutes', lease_token = d.lease_token + 1
    FROM (SELECT q.destination_id, q.id FROM destinations dst
           CROSS JOIN LATERAL (
             SELECT destination_id, id FROM delivery_queue
              WHERE destination_id = dst.id AND run_at <= now() AND (leased_until IS NULL OR leased_until <= now())
              ORDER BY run_at LIMIT ${limit}
              FOR UPDATE SKIP LOCKED) q
           ${oneDestination ? "WHERE dst.id = $1" : ""}
           LIMIT ${limit}) c, messages m
   WHERE d.destination_id = c.destination_id AND d.id = c.id
     AND m.id = d.message_pk
  RETURNING d.destination_id, d.id, d.lease_token, m.message_id, m.payload, m.received_at`;

// A finished delivery leaves the queue for the history, fenced by lease_token.
export const doneStatement = `
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

/** @typedef {{ destination_id: string, id: string, lease_token: number, message_id: string, payload: string, received_at: Date }} Job */

/**
 * The CPU seconds so far of the Postgres backends serving these clients (undefined when /proc cannot tell).
 * @param {pg.Client[]} clients
 */
export async function backendMeter(clients) {
  const pids = await Promise.all(clients.map(async (c) => (await c.query("SELECT pg_backend_pid() AS pid")).rows[0].pid));
  return () => {
    let sum = 0;
    for (const pid of pids) {
      const seconds = cpuSeconds(pid);
      if (seconds === undefined) return undefined;
      sum += seconds;
    }
    return sum;
  };
}

/**
 * Claims, sends and completes `count` queued deliveries; `send` resolves true when the job was accepted.
 * Times from start until the last send was answered (as the service's burn-down is timed, to arrival),
 * and until the last was recorded.
 * @param {{ url: string, count: number, inflight: number, send: (job: Job) => Promise<boolean> }} options
 */
export async function runBareLoop({ url, count, inflight, send }) {
  const claimer = new pg.Client({ connectionString: url });
  const completer = new pg.Client({ connectionString: url });
  await Promise.all([claimer.connect(), completer.connect()]);
  const backendCpu = await backendMeter([claimer, completer]);
  const state = { sent: 0, recorded: 0, failed: 0, stop: false, lastSentAt: 0 };
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
      const { rows } = await claimer.query({ name: "bare-claim", text: claimStatement(batch) });
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

  const completions = completionWriter(completer, (n) => (state.recorded += n));
  const senders = Array.from({ length: inflight }, async () => {
    while (state.sent + state.failed < count) {
      const job = await take();
      if (job === undefined) return;
      const ok = await send(job).catch(() => false);
      if (ok) {
        state.sent++;
        completions.add(job);
      } else state.failed++;
      state.lastSentAt = performance.now();
    }
  });
  // Senders stop by count; release any parked on an empty queue.
  await Promise.race([
    Promise.all(senders),
    (async () => {
      while (state.sent + state.failed < count) await new Promise((resolve) => setTimeout(resolve, 5));
    })(),
  ]);
  const sentAt = state.lastSentAt;
  for (const resolve of waiters.splice(0)) resolve(undefined);
  await Promise.all(senders);
  await completions.drain();
  const recordedAt = performance.now();
  const cpu = process.cpuUsage(cpu0);
  const postgres1 = backendCpu();
  state.stop = true;
  wakeClaimer?.();
  await claiming;
  await Promise.all([claimer.end(), completer.end()]);
  return {
    deliveries: count,
    per_s: Math.round((state.sent / (sentAt - start)) * 1000),
    all_recorded_after_s: Math.round(recordedAt - start) / 1000,
    recorded: state.recorded,
    failed: state.failed,
    inflight,
    script_cpu_us_per_delivery: Math.round((cpu.user + cpu.system) / Math.max(1, state.sent)),
    // Its Postgres backends' CPU, read from /proc (null when Postgres is not on this machine).
    postgres_cpu_us_per_delivery:
      postgres0 === undefined || postgres1 === undefined ? null : Math.round(((postgres1 - postgres0) * 1e6) / Math.max(1, state.sent)),
  };
}

/**
 * Completions in batches of 500 (or every 20 ms for a smaller tail), one statement at a time on `client`.
 * @param {pg.Client} client
 * @param {(recorded: number) => void} onRecorded
 */
export function completionWriter(client, onRecorded) {
  /** @type {{ destinations: string[], ids: string[], tokens: number[] }} */
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
      const result = await client.query({ name: "bare-done", text: doneStatement, values: [chunk.destinations, chunk.ids, chunk.tokens] });
      onRecorded(result.rowCount ?? 0);
    });
  };
  return {
    /** @param {Job} job */
    add(job) {
      pending.destinations.push(job.destination_id);
      pending.ids.push(job.id);
      pending.tokens.push(job.lease_token);
      if (pending.ids.length >= batch) writeBatch();
      else if (!timer) timer = setTimeout(writeBatch, 20);
    },
    async drain() {
      if (pending.ids.length > 0) writeBatch();
      await writing;
    },
  };
}
