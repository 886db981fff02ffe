// @ts-check
// The warehouse scenario's same-run baseline: the work of loading calls into
// a warehouse end to end, with nothing of Waypost's in between, made as
// strong as the hardware allows so that the ratio printed beside the
// service's rate is honest:
// - ingest: 4 connections insert the calls' messages and queued deliveries
//   in prepared multi-row statements of 100 (bench/bare-insert.mjs's
//   statement and bodies), until COUNT are stored;
// - meanwhile LANES loaders each claim up to BATCH due deliveries with their
//   bodies (the burn-down bare loop's claim), flatten each body into the
//   columns of the warehouse's `tracks` and event tables, insert both in
//   one transaction on a warehouse connection of their own (one
//   `INSERT … SELECT FROM unnest(…)` per table, as the loader does), and then
//   complete the deliveries (the bare loop's fenced move to the history).
// The tables are `bare.tracks` and `bare.order_completed`, made `LIKE` the
// service's `waypost.*` (columns and indexes), so the service must have
// loaded the same calls into WAREHOUSE_URL first.
//
//   node bench/bare-warehouse.mjs DATABASE_URL WAREHOUSE_URL SOURCE_ID DESTINATION_ID COUNT [BATCH=1000] [LANES=2]
//
// Prints one JSON line: `per_s` from the first insert until the last call is
// committed in the warehouse and recorded, beside the ingest alone's rate.
import { fileURLToPath } from "node:url";
import pg from "pg";
import { insertStatement, trackBody } from "./bare-insert.mjs";
import { backendMeter, claimStatement, doneStatement } from "./lib/bare-loop.mjs";

const tables = ["tracks", "order_completed"];

/**
 * @param {{ url: string, warehouseUrl: string, sourceId: string, destinationId: string, count: number, batch?: number, lanes?: number }} options
 */
export async function bareWarehouse({ url, warehouseUrl, sourceId, destinationId, count, batch = 1_000, lanes = 2 }) {
  const connect = async (/** @type {string} */ connectionString) => {
    const client = new pg.Client({ connectionString });
    await client.connect();
    return client;
  };
  const inserters = await Promise.all(Array.from({ length: 4 }, () => connect(url)));
  const loaders = await Promise.all(
    Array.from({ length: lanes }, async () => ({ job: await connect(url), warehouse: await connect(warehouseUrl) })),
  );
  const first = loaders[0];
  if (!first) throw new Error("bare warehouse: at least one lane");
  const columns = await prepareTables(first.warehouse);
  const clients = [...inserters, ...loaders.flatMap((l) => [l.job, l.warehouse])];
  const backendCpu = await backendMeter(clients);
  const state = { inserted: 0, loaded: 0, ingestedAt: 0 };
  const tag = `barewh-${process.pid}-${Date.now().toString(36)}`;

  const start = performance.now();
  const cpu0 = process.cpuUsage();
  const postgres0 = backendCpu();
  let next = 0;
  const ingest = inserters.map(async (client) => {
    const ids = [];
    const users = [];
    const bodies = [];
    while (next < count) {
      const size = Math.min(100, count - next);
      ids.length = users.length = bodies.length = 0;
      for (let i = 0; i < size; i++, next++) {
        ids.push(`${tag}-${next}`);
        users.push(`user-${next % 5000}`);
        bodies.push(trackBody(`${tag}-${next}`, next));
      }
      const result = await client.query({
        name: "bare-insert",
        text: insertStatement,
        values: [sourceId, ids, users, bodies, destinationId],
      });
      state.inserted += result.rowCount ?? 0;
    }
    state.ingestedAt = performance.now();
  });
  const load = loaders.map(async ({ job, warehouse }) => {
    while (state.loaded < count) {
      /** @type {{ rows: import("./lib/bare-loop.mjs").Job[] }} */
      const { rows } = await job.query({
        name: "bare-claim",
        text: claimStatement(batch, { oneDestination: true }),
        values: [destinationId],
      });
      if (rows.length === 0) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        continue;
      }
      await loadBatch(warehouse, columns, rows);
      await job.query({
        name: "bare-done",
        text: doneStatement,
        values: [rows.map((r) => r.destination_id), rows.map((r) => r.id), rows.map((r) => r.lease_token)],
      });
      state.loaded += rows.length;
    }
  });
  await Promise.all([...ingest, ...load]);
  const loadedAt = performance.now();
  const cpu = process.cpuUsage(cpu0);
  const postgres1 = backendCpu();
  const stored = await Promise.all(
    tables.map(async (t) => (await first.warehouse.query(`SELECT count(*)::int AS n FROM bare.${t}`)).rows[0].n),
  );
  await Promise.all(clients.map((c) => c.end()));
  return {
    baseline: "bare-warehouse",
    calls: count,
    per_s: Math.round((count / (loadedAt - start)) * 1000),
    ingest_alone_per_s: Math.round((count / (state.ingestedAt - start)) * 1000),
    rows_in_warehouse: Object.fromEntries(tables.map((t, i) => [t, stored[i]])),
    batch,
    lanes,
    script_cpu_us_per_call: Math.round((cpu.user + cpu.system) / count),
    // Its Postgres backends' CPU (job table and warehouse), read from /proc (null when Postgres is not on this machine).
    postgres_cpu_us_per_call:
      postgres0 === undefined || postgres1 === undefined ? null : Math.round(((postgres1 - postgres0) * 1e6) / count),
  };
}

/**
 * Makes bare.* like the service's tables; returns each table's columns and types.
 * @param {pg.Client} warehouse
 * @returns {Promise<Map<string, Array<[string, string]>>>}
 */
export async function prepareTables(warehouse) {
  await warehouse.query("DROP SCHEMA IF EXISTS bare CASCADE; CREATE SCHEMA bare");
  for (const table of tables) await warehouse.query(`CREATE TABLE bare.${table} (LIKE waypost.${table} INCLUDING ALL)`);
  const { rows } = await warehouse.query(
    `SELECT table_name, column_name, format_type(a.atttypid, a.atttypmod) AS type
       FROM information_schema.columns c
       JOIN pg_attribute a ON a.attrelid = ('bare.' || quote_ident(c.table_name))::regclass AND a.attname = c.column_name
      WHERE table_schema = 'bare' ORDER BY ordinal_position`,
  );
  /** @type {Map<string, Array<[string, string]>>} */
  const columns = new Map(tables.map((t) => [t, []]));
  for (const row of rows) columns.get(row.table_name)?.push([row.column_name, row.type]);
  return columns;
}

const snake = (/** @type {string} */ name) =>
  name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/[^A-Za-z0-9]+/g, "_")
    .toLowerCase();

/**
 * A call's cells as the warehouse layout has them: the common columns, context with a `context_` prefix, the event's names; properties only in the event's table.
 * @param {{ payload: string, received_at: Date }} job
 * @param {string} loadedAt
 */
function cellsOf(job, loadedAt) {
  const body = JSON.parse(job.payload);
  const event = snake(body.event);
  /** @type {Record<string, unknown>} */
  const common = {
    id: body.messageId,
    received_at: new Date(job.received_at).toISOString(),
    timestamp: body.timestamp,
    original_timestamp: body.timestamp,
    user_id: body.userId,
    anonymous_id: body.anonymousId,
    loaded_at: loadedAt,
    event,
    event_text: body.event,
    event_table: event,
  };
  for (const [key, value] of Object.entries(body.context ?? {})) common[`context_${snake(key)}`] = value;
  /** @type {Record<string, unknown>} */
  const properties = {};
  for (const [key, value] of Object.entries(body.properties ?? {})) properties[snake(key)] = value;
  return { tracks: common, order_completed: { ...common, ...properties } };
}

/**
 * One transaction: per table one INSERT of every row, one array parameter per column.
 * @param {pg.Client} warehouse
 * @param {Map<string, Array<[string, string]>>} columns
 * @param {Array<{ payload: string, received_at: Date }>} jobs the calls' stored bodies and when they were received
 */
export async function loadBatch(warehouse, columns, jobs) {
  const loadedAt = new Date().toISOString();
  const cells = jobs.map((job) => cellsOf(job, loadedAt));
  await warehouse.query("BEGIN");
  for (const table of tables) {
    const list = columns.get(table) ?? [];
    const values = list.map(([name]) =>
      cells.map((c) => {
        const value = /** @type {Record<string, unknown>} */ (c[/** @type {"tracks" | "order_completed"} */ (table)])[name];
        return value === undefined || value === null ? null : String(value);
      }),
    );
    const names = list.map(([name]) => `"${name}"`).join(", ");
    const casts = list.map(([, type], i) => `$${i + 1}::${type}[]`).join(", ");
    await warehouse.query({
      name: `bare-load-${table}`,
      text: `INSERT INTO bare.${table} (${names}) SELECT * FROM unnest(${casts}) ON CONFLICT (id) DO NOTHING`,
      values,
    });
  }
  await warehouse.query("COMMIT");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [url, warehouseUrl, sourceId, destinationId, count, batch, lanes] = process.argv.slice(2);
  if (!url || !warehouseUrl || !sourceId || !destinationId || !count) {
    throw new Error(
      "usage: node bench/bare-warehouse.mjs DATABASE_URL WAREHOUSE_URL SOURCE_ID DESTINATION_ID COUNT [BATCH=1000] [LANES=2]",
    );
  }
  const result = await bareWarehouse({
    url,
    warehouseUrl,
    sourceId,
    destinationId,
    count: Number(count),
    batch: Number(batch ?? 1_000),
    lanes: Number(lanes ?? 2),
  });
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
