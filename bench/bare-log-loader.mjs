// @ts-check
// The same-run reference of a batching destination on the call log: a bare
// cursor loader on Waypost's own tables (messages with log_xid, log_cursors,
// log_batches) with nothing of the service's in between (no routing, no
// attempt rows, no exceptions, no metrics), made as strong as the hardware
// allows so that the ratio printed beside the service's rate is honest:
// - one connection reads the next BATCH calls of the source past the
//   cursor, in position order (log_xid, id), below the oldest transaction
//   still running (pg_snapshot_xmin: no call can commit behind it later;
//   simpler than the service's snapshot bursts, which also read past a
//   transaction left open elsewhere on the server; the snapshot columns of
//   its rows are filler),
//   and reads the page after while the ones before are delivered;
// - up to INFLIGHT pages are delivered at once, each as one batch of its
//   kind: `warehouse`, one `INSERT … SELECT FROM unnest(…)` per table of
//   the warehouse in one transaction (bench/bare-warehouse.mjs's load, into
//   tables made LIKE the service's, so the service must have loaded into
//   WAREHOUSE_URL first); `amqp`, confirm-channel publishes with the call's
//   message id; `nats`, acknowledged JetStream publishes with `msgID`
//   (bench/bare-broker.mjs's publishers); `batched-webhooks`, one signed
//   POST of `{"batch":[...]}` to the sink's /batch;
// - a second connection retires the pages in position order: one statement
//   (one transaction) moves the cursor from the page's first position to
//   its last, fenced by the position it had, and inserts the page's
//   log_batches row.
// The cursor is the live cursor of (DESTINATION_ID, SOURCE_ID): made before
// the calls were stored (bench/lib/queue.mjs's addBareLogCursor).
//
//   node bench/bare-log-loader.mjs warehouse DATABASE_URL SOURCE_ID DESTINATION_ID COUNT WAREHOUSE_URL [BATCH=1000] [INFLIGHT=2]
//   node bench/bare-log-loader.mjs amqp DATABASE_URL SOURCE_ID DESTINATION_ID COUNT EXCHANGE [BATCH=500] [INFLIGHT=2]
//   node bench/bare-log-loader.mjs nats DATABASE_URL SOURCE_ID DESTINATION_ID COUNT SUBJECT_PREFIX [BATCH=500] [INFLIGHT=2]
//   node bench/bare-log-loader.mjs batched-webhooks DATABASE_URL SOURCE_ID DESTINATION_ID COUNT SINK_URL [BATCH=100] [INFLIGHT=4]
//
// Prints one JSON line: `per_s` from start until the last call's batch is
// recorded in log_batches. It stops once COUNT calls are recorded, or after
// IDLE ms (5,000) with nothing left to read.
import { fileURLToPath } from "node:url";
import pg from "pg";
import { prepareTables, loadBatch } from "./bare-warehouse.mjs";
import { amqpPublisher, natsPublisher } from "./bare-broker.mjs";
import { backendMeter } from "./lib/bare-loop.mjs";
import { batchPoster } from "./lib/batch-post.mjs";

/** @typedef {"warehouse" | "amqp" | "nats" | "batched-webhooks"} LogKind */
/** @typedef {{ id: string, xid: string, message_id: string, payload: string, received_at: Date }} LogCall */
/** @typedef {{ xid: string, id: string }} Position */

export const logKinds = /** @type {const} */ (["warehouse", "amqp", "nats", "batched-webhooks"]);

/** Each kind's page and pages in flight: the service's warehouse batch (two in flight), the bare publish loops' window, the bare batch loop's four POSTs. */
const defaults = {
  warehouse: { batch: 1_000, inflight: 2 },
  amqp: { batch: 500, inflight: 2 },
  nats: { batch: 500, inflight: 2 },
  "batched-webhooks": { batch: 100, inflight: 4 },
};

// The next calls of a source past a position, below every transaction still running. (The position's
// xid is read as text under another name: ORDER BY log_xid would otherwise sort by the text.)
const readStatement = `
  SELECT id, log_xid::text AS xid, message_id, payload, received_at
    FROM messages
   WHERE source_id = $1 AND (log_xid, id) > ($2::xid8, $3::bigint)
     AND log_xid < pg_snapshot_xmin(pg_current_snapshot())
   ORDER BY log_xid, id
   LIMIT $4`;

// One transaction: the cursor moves from the page's first position to its last (only from where it was), and the page is recorded.
const retireStatement = `
  WITH moved AS (
    UPDATE log_cursors SET after_xid = $6::xid8, after_id = $7
     WHERE destination_id = $1 AND source_id = $2 AND lane = 'live' AND after_xid = $3::xid8 AND after_id = $4
    RETURNING 1
  )
  INSERT INTO log_batches (destination_id, source_id, lane, seen, up_to, from_xid, from_id, to_xid, to_id, calls, delivered, finished_at)
  SELECT $1, $2, 'live', pg_current_snapshot(), pg_current_snapshot(), $3::xid8, $4, $6::xid8, $7, $5, $5, now() FROM moved`;

/**
 * A kind's delivery of one page: resolves when every call of it was accepted (a bare reference does not fail calls: it throws).
 * @param {LogKind} kind
 * @param {string} target WAREHOUSE_URL, EXCHANGE, SUBJECT_PREFIX or SINK_URL
 * @param {number} inflight pages delivered at once
 * @returns {Promise<{ deliver(calls: LogCall[], slot: number): Promise<void>, clients: pg.Client[], close(): Promise<Record<string, unknown>> }>}
 */
async function deliverer(kind, target, inflight) {
  if (kind === "warehouse") {
    // One warehouse connection per page in flight: a page's load is one transaction on its own connection.
    const slots = await Promise.all(
      Array.from({ length: inflight }, async () => {
        const client = new pg.Client({ connectionString: target });
        await client.connect();
        return client;
      }),
    );
    const first = /** @type {pg.Client} */ (slots[0]);
    const columns = await prepareTables(first);
    return {
      deliver: (calls, slot) => loadBatch(/** @type {pg.Client} */ (slots[slot]), columns, calls),
      clients: slots,
      async close() {
        const { rows } = await first.query(
          "SELECT (SELECT count(*) FROM bare.tracks)::int AS tracks, (SELECT count(*) FROM bare.order_completed)::int AS order_completed",
        );
        await Promise.all(slots.map((c) => c.end()));
        return { rows_in_warehouse: rows[0] };
      },
    };
  }
  if (kind === "batched-webhooks") {
    const poster = batchPoster(target, inflight);
    return {
      deliver: (calls) => poster.post(calls.map((c) => c.payload)),
      clients: [],
      async close() {
        await poster.close();
        return {};
      },
    };
  }
  const publisher = kind === "amqp" ? await amqpPublisher(target) : await natsPublisher(target);
  return {
    async deliver(calls) {
      const accepted = await Promise.all(calls.map((call) => publisher.send(call)));
      const refused = accepted.filter((ok) => !ok).length;
      if (refused > 0) throw new Error(`${kind}: ${refused} of ${calls.length} publishes refused`);
    },
    clients: [],
    async close() {
      await publisher.close();
      return {};
    },
  };
}

/**
 * Reads, delivers and records `count` calls of a source past its cursor (above); resolves with what it measured.
 * @param {{ kind: LogKind, url: string, sourceId: string, destinationId: string, count: number, target: string,
 *           batch?: number, inflight?: number, idleMs?: number }} options
 */
export async function bareLogLoader({ kind, url, sourceId, destinationId, count, target, batch, inflight, idleMs = 5_000 }) {
  const pageSize = batch ?? defaults[kind].batch;
  const pages = inflight ?? defaults[kind].inflight;
  const reader = new pg.Client({ connectionString: url });
  const recorder = new pg.Client({ connectionString: url });
  await Promise.all([reader.connect(), recorder.connect()]);
  const delivery = await deliverer(kind, target, pages);
  const backendCpu = await backendMeter([reader, recorder, ...delivery.clients]);
  const cursor = await reader.query(
    "SELECT after_xid::text AS xid, after_id::text AS id FROM log_cursors WHERE destination_id = $1 AND source_id = $2 AND lane = 'live'",
    [destinationId, sourceId],
  );
  if (cursor.rows.length === 0) throw new Error(`bare log loader: no live cursor of destination ${destinationId} on source ${sourceId}`);
  /** @type {Position} */
  let position = cursor.rows[0];
  /** @param {Position} after @returns {Promise<LogCall[]>} */
  const read = async (after) =>
    (await reader.query({ name: "bare-log-read", text: readStatement, values: [sourceId, after.xid, after.id, pageSize] })).rows;
  const state = { taken: 0, recorded: 0, batches: 0, lastDeliveredAt: 0, lastRecordedAt: 0 };
  /** @type {Array<{ calls: LogCall[], from: Position, to: Position, sent: Promise<void> }>} */
  const window = [];
  /** @param {{ calls: LogCall[], from: Position, to: Position, sent: Promise<void> }} page */
  const retire = async (page) => {
    await page.sent;
    state.lastDeliveredAt = performance.now();
    const values = [destinationId, sourceId, page.from.xid, page.from.id, page.calls.length, page.to.xid, page.to.id];
    const result = await recorder.query({ name: "bare-log-retire", text: retireStatement, values });
    if (result.rowCount !== 1) throw new Error(`bare log loader: the cursor was not at ${page.from.xid}/${page.from.id}`);
    state.recorded += page.calls.length;
    state.batches++;
    state.lastRecordedAt = performance.now();
  };

  const start = performance.now();
  const cpu0 = process.cpuUsage();
  const postgres0 = backendCpu();
  let idleSince = start;
  let slot = 0;
  /** @type {Promise<LogCall[]>} */
  let reading = read(position);
  for (;;) {
    const calls = await reading;
    if (calls.length > 0) {
      const last = /** @type {LogCall} */ (calls.at(-1));
      const from = position;
      position = { xid: last.xid, id: last.id };
      state.taken += calls.length;
      const sent = delivery.deliver(calls, slot++ % pages);
      // Its failure is thrown when the page is retired, in order; until then it is not unhandled.
      sent.catch(() => {});
      window.push({ calls, from, to: position, sent });
      idleSince = performance.now();
    } else if (window.length === 0) {
      // Nothing read and nothing in flight: done, or the next calls are not below the oldest running transaction yet.
      if (state.recorded >= count || performance.now() - idleSince > idleMs) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    // The next page is read while the pages before it are delivered and recorded.
    reading = state.taken >= count ? Promise.resolve([]) : read(position);
    const oldest = window.length >= pages || (calls.length === 0 && window.length > 0) ? window.shift() : undefined;
    if (oldest) await retire(oldest);
  }
  const cpu = process.cpuUsage(cpu0);
  const postgres1 = backendCpu();
  const delivered = await delivery.close();
  await Promise.all([reader.end(), recorder.end()]);
  const recorded = Math.max(1, state.recorded);
  return {
    baseline: `bare-log-loader-${kind}`,
    calls: state.recorded,
    per_s: Math.round((state.recorded / (state.lastRecordedAt - start)) * 1000),
    delivered_after_s: Math.round(state.lastDeliveredAt - start) / 1000,
    all_recorded_after_s: Math.round(state.lastRecordedAt - start) / 1000,
    batches: state.batches,
    batch: pageSize,
    inflight: pages,
    ...delivered,
    script_cpu_us_per_call: Math.round((cpu.user + cpu.system) / recorded),
    // Its Postgres backends' CPU (the log's and, for the warehouse, the warehouse's), from /proc (null when Postgres is not on this machine).
    postgres_cpu_us_per_call:
      postgres0 === undefined || postgres1 === undefined ? null : Math.round(((postgres1 - postgres0) * 1e6) / recorded),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [kind, url, sourceId, destinationId, count, target, batch, inflight] = process.argv.slice(2);
  const known = /** @type {readonly string[]} */ (logKinds);
  if (!kind || !known.includes(kind) || !url || !sourceId || !destinationId || !count || !target) {
    throw new Error(
      "usage: node bench/bare-log-loader.mjs warehouse|amqp|nats|batched-webhooks DATABASE_URL SOURCE_ID DESTINATION_ID COUNT TARGET [BATCH] [INFLIGHT]",
    );
  }
  const result = await bareLogLoader({
    kind: /** @type {LogKind} */ (kind),
    url,
    sourceId,
    destinationId,
    count: Number(count),
    target,
    batch: batch ? Number(batch) : undefined,
    inflight: inflight ? Number(inflight) : undefined,
  });
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
