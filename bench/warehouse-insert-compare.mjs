// @ts-check
// How a warehouse batch is best written: the same rows (a table shaped like
// an event table of the warehouse layout, 13 columns) loaded in batches of
// 2,500 in one transaction each, ON CONFLICT (id) DO NOTHING, three ways,
// interleaved so the machine's load falls on all of them alike:
//   unnest   one INSERT … SELECT FROM unnest($1::text[], …) per batch (what the loader does)
//   copy     COPY into a temporary staging table, then INSERT … SELECT … ON CONFLICT
//   values   multi-row INSERT … VALUES ($1, …), (…) in statements of at most 65,535 parameters
//
//   node bench/warehouse-insert-compare.mjs [ROWS]    (DATABASE_URL: a Postgres server)
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import pg from "pg";
import copyStreams from "pg-copy-streams";

const rows = Number(process.argv[2] ?? 100_000);
const batchSize = 2_500;
const server = process.env.DATABASE_URL;
if (!server) throw new Error("DATABASE_URL is not set");
const name = `waypost_bench_copy_${randomBytes(4).toString("hex")}`;
const admin = new pg.Client({ connectionString: server });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const url = new URL(server);
url.pathname = `/${name}`;
const client = new pg.Client({ connectionString: url.toString() });
await client.connect();

const columns = [
  ["id", "text"],
  ["received_at", "timestamptz"],
  ["timestamp", "timestamptz"],
  ["original_timestamp", "timestamptz"],
  ["user_id", "text"],
  ["anonymous_id", "text"],
  ["event", "text"],
  ["event_text", "text"],
  ["context_ip", "text"],
  ["context_library_name", "text"],
  ["order_id", "text"],
  ["total", "double precision"],
  ["currency", "text"],
];
const names = columns.map(([n]) => `"${n}"`).join(", ");

/** @param {string} run @param {number} i */
function row(run, i) {
  const at = new Date(Date.UTC(2026, 10, 22, 10, 0, 0, i)).toISOString();
  return [
    `${run}-${i}`,
    at,
    at,
    at,
    `user-${i % 5000}`,
    null,
    "order_completed",
    "Order Completed",
    "203.0.113.9",
    "bench",
    String(i),
    42.5,
    "EUR",
  ];
}

/** @type {Record<string, (table: string, batch: unknown[][]) => Promise<void>>} */
const ways = {
  async unnest(table, batch) {
    const arrays = columns.map((_, c) => batch.map((r) => (r[c] === null ? null : String(r[c]))));
    const casts = columns.map(([, type], c) => `$${c + 1}::${type}[]`).join(", ");
    await client.query(`INSERT INTO ${table} (${names}) SELECT * FROM unnest(${casts}) ON CONFLICT (id) DO NOTHING`, arrays);
  },
  async copy(table, batch) {
    await client.query(`CREATE TEMP TABLE staging (LIKE ${table}) ON COMMIT DROP`);
    const text = batch
      .map((r) =>
        r
          .map((v) =>
            v === null
              ? "\\N"
              : String(v).replace(/[\\\t\n\r]/g, (ch) => `\\${ch === "\t" ? "t" : ch === "\n" ? "n" : ch === "\r" ? "r" : "\\"}`),
          )
          .join("\t"),
      )
      .join("\n");
    await pipeline(Readable.from([`${text}\n`]), client.query(copyStreams.from(`COPY staging (${names}) FROM STDIN`)));
    await client.query(`INSERT INTO ${table} SELECT * FROM staging ON CONFLICT (id) DO NOTHING`);
  },
  async values(table, batch) {
    const perStatement = Math.floor(65_535 / columns.length);
    for (let start = 0; start < batch.length; start += perStatement) {
      const part = batch.slice(start, start + perStatement);
      const tuples = part.map((_, r) => `(${columns.map((__, c) => `$${r * columns.length + c + 1}`).join(", ")})`);
      await client.query(`INSERT INTO ${table} (${names}) VALUES ${tuples.join(", ")} ON CONFLICT (id) DO NOTHING`, part.flat());
    }
  },
};

/** @type {Map<string, number[]>} */
const rates = new Map(Object.keys(ways).map((way) => [way, []]));
try {
  for (let round = 0; round < 2; round++) {
    for (const [way, write] of Object.entries(ways)) {
      const table = `t_${way}_${round}`;
      await client.query(`CREATE TABLE ${table} (${columns.map(([n, t]) => `"${n}" ${t}${n === "id" ? " PRIMARY KEY" : ""}`).join(", ")})`);
      await client.query("CHECKPOINT");
      const start = performance.now();
      for (let at = 0; at < rows; at += batchSize) {
        const batch = Array.from({ length: Math.min(batchSize, rows - at) }, (_, i) => row(way, at + i));
        await client.query("BEGIN");
        await write(table, batch);
        await client.query("COMMIT");
      }
      rates.get(way)?.push(Math.round((rows / (performance.now() - start)) * 1000));
      const count = (await client.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n;
      if (count !== rows) throw new Error(`${way}: ${count} rows, expected ${rows}`);
    }
  }
  console.log(JSON.stringify({ scenario: "warehouse-insert-compare", rows, batch_size: batchSize, rows_per_s: Object.fromEntries(rates) }));
} finally {
  await client.end();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
