// @ts-check
// The ingest scenario's same-run baseline: the rows one Batch of track calls
// becomes (a message and a delivery per call), written by a bare script with
// nothing in between: no RPC, no decoding, no validation, no routing.
// It is made as strong as the hardware allows, so the ratio printed beside
// the service's rate is honest: 4 connections (more only queue on 2 cores),
// one prepared multi-row statement per batch (unnest into a data-modifying
// CTE, one implicit transaction), bodies built once beforehand.
//
//   node bench/bare-insert.mjs DATABASE_URL SOURCE_ID DESTINATION_ID DURATION_MS [BATCH=100] [CONNECTIONS=4]
//
// Prints one JSON line: rows (calls) per second, measured after a 1 s warm-up.
import { fileURLToPath } from "node:url";
import pg from "pg";
import { cpuSeconds } from "./lib/cpu.mjs";

export const insertStatement = `
  WITH m AS (
    INSERT INTO messages (source_id, message_id, type, user_id, received_at, payload)
    SELECT $1, i.message_id, 'track', i.user_id, now(), i.payload
      FROM unnest($2::text[], $3::text[], $4::text[]) AS i(message_id, user_id, payload)
    ON CONFLICT (source_id, message_id) DO NOTHING
    RETURNING id
  )
  INSERT INTO delivery_queue (destination_id, message_pk, source_id, run_at, created_at)
  SELECT $5, m.id, $1, now(), now() FROM m`;

/**
 * A stored track body as the service builds it (about 230 bytes), with its messageId: a template, so building costs next to nothing.
 * @param {string} messageId
 * @param {number} i
 */
export function trackBody(messageId, i) {
  return `{"version":1,"type":"track","userId":"user-${i % 5000}","event":"Order Completed","properties":{"orderId":"${i}","total":42.5,"currency":"EUR"},"context":{"ip":"203.0.113.9"},"timestamp":"2026-11-22T10:04:05.123Z","messageId":"${messageId}"}`;
}

/**
 * @param {{ url: string, sourceId: string, destinationId: string, durationMs: number, batchSize?: number, connections?: number, warmupMs?: number }} options
 */
export async function bareInsert({ url, sourceId, destinationId, durationMs, batchSize = 100, connections = 4, warmupMs = 1_000 }) {
  const clients = await Promise.all(
    Array.from({ length: connections }, async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      return client;
    }),
  );
  const backends = await Promise.all(clients.map(async (c) => (await c.query("SELECT pg_backend_pid() AS pid")).rows[0].pid));
  const backendCpu = () =>
    backends.reduce((sum, pid) => (sum === undefined || cpuSeconds(pid) === undefined ? undefined : sum + cpuSeconds(pid)), 0);
  const tag = `bare-${process.pid}-${Date.now().toString(36)}`;
  const state = { rows: 0, stop: false };
  const workers = clients.map(async (client, w) => {
    let seq = 0;
    // Parameter arrays are filled in place: the script should spend its CPU in Postgres' client protocol, not in allocation.
    const ids = new Array(batchSize);
    const users = new Array(batchSize);
    const bodies = new Array(batchSize);
    while (!state.stop) {
      for (let i = 0; i < batchSize; i++) {
        const id = `${tag}-${w}-${seq++}`;
        ids[i] = id;
        users[i] = `user-${seq % 5000}`;
        bodies[i] = trackBody(id, seq);
      }
      const result = await client.query({
        name: "bare-insert",
        text: insertStatement,
        values: [sourceId, ids, users, bodies, destinationId],
      });
      state.rows += result.rowCount ?? 0;
    }
  });
  await new Promise((resolve) => setTimeout(resolve, warmupMs));
  const rows0 = state.rows;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const postgres0 = backendCpu();
  await new Promise((resolve) => setTimeout(resolve, durationMs));
  const rows = state.rows - rows0;
  const elapsedMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const postgres1 = backendCpu();
  state.stop = true;
  await Promise.all(workers);
  await Promise.all(clients.map((c) => c.end()));
  return {
    baseline: "bare-insert",
    rows_per_s: Math.round((rows / elapsedMs) * 1000),
    rows,
    elapsed_s: Math.round(elapsedMs) / 1000,
    connections,
    batch_size: batchSize,
    script_cpu_pct: Math.round(((cpu.user + cpu.system) / 1000 / elapsedMs) * 100),
    // Its Postgres backends' CPU, read from /proc (null when Postgres is not on this machine).
    postgres_cpu_us_per_row: postgres0 === undefined || postgres1 === undefined ? null : Math.round(((postgres1 - postgres0) * 1e6) / rows),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [url, sourceId, destinationId, durationMs, batch, connections] = process.argv.slice(2);
  if (!url || !sourceId || !destinationId) {
    throw new Error("usage: node bench/bare-insert.mjs DATABASE_URL SOURCE_ID DESTINATION_ID DURATION_MS [BATCH=100] [CONNECTIONS=4]");
  }
  const result = await bareInsert({
    url,
    sourceId,
    destinationId,
    durationMs: Number(durationMs ?? 10_000),
    batchSize: Number(batch ?? 100),
    connections: Number(connections ?? 4),
  });
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
