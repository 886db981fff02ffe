// @ts-check
/// <reference path="../test/helpers/s3rver.d.ts" />
// The lake's same-run baseline: the work of writing calls into a lake, with
// nothing of Waypost's in between. COUNT of the bench's track calls, already
// flattened into the warehouse layout's columns, are written BATCH at a time
// as two Parquet files (zstd) per batch — `tracks` and the event's table, as
// the lake writes them — by DuckDB
// (rows through its appender, then COPY … TO), and each file is PUT to a
// loopback S3 server (s3rver) with the AWS SDK. LANES batches are in flight
// at once, so one lane's upload overlaps another's write.
//
//   node bench/lake-bare.mjs COUNT [BATCH=10000] [LANES=2]
//
// Prints one JSON line: `per_s` (calls per second from the first write until
// the last PUT is answered), the writer's share of the time, bytes written.
import { mkdtempSync, rmSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { DuckDBInstance } from "@duckdb/node-api";
import S3rver from "s3rver";

/** @typedef {"bigint" | "double" | "boolean" | "timestamp" | "text" | "json"} LakeType */

const duckTypes = { bigint: "BIGINT", double: "DOUBLE", boolean: "BOOLEAN", timestamp: "VARCHAR", text: "VARCHAR", json: "VARCHAR" };

// The columns the lake writes for the bench's call (bench/lib/queue.mjs benchBody: an "Order Completed"
// track with orderId, total and currency, and context.ip), as src/lake/lake-rows.ts lays it out.
/** @type {Array<[string, LakeType]>} */
const common = [
  ["id", "text"],
  ["received_at", "timestamp"],
  ["loaded_at", "timestamp"],
  ["timestamp", "timestamp"],
  ["original_timestamp", "timestamp"],
  ["user_id", "text"],
  ["context_ip", "text"],
  ["event", "text"],
  ["event_text", "text"],
  ["event_table", "text"],
];

/** @type {Record<string, Array<[string, LakeType]>>} */
const tables = {
  tracks: common,
  order_completed: [...common, ["order_id", "text"], ["total", "double"], ["currency", "text"]],
};

/** One flattened bench call: every column of both tables. @param {number} i */
function flattenedCall(i) {
  const at = new Date(Date.UTC(2026, 10, 22, 10) + i).toISOString();
  return {
    id: `b-${i}`,
    received_at: at,
    loaded_at: at,
    timestamp: "2026-11-22T10:04:05.123Z",
    original_timestamp: "2026-11-22T10:04:05.123Z",
    user_id: `user-${i}`,
    context_ip: "203.0.113.9",
    event: "order_completed",
    event_text: "Order Completed",
    event_table: "order_completed",
    order_id: String(i),
    total: 42.5,
    currency: "EUR",
  };
}

/** @param {{ count: number, batch?: number, lanes?: number }} options */
export async function lakeBare({ count, batch = 10_000, lanes = 2 }) {
  const work = mkdtempSync(path.join(tmpdir(), "lake-bare-"));
  const s3 = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory: path.join(work, "s3"),
    configureBuckets: [{ name: "lake" }],
  });
  const { port } = await s3.run();
  const client = new S3Client({
    endpoint: `http://127.0.0.1:${port}`,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  const instance = await DuckDBInstance.create(":memory:", {
    threads: "1",
    autoload_known_extensions: "false",
    autoinstall_known_extensions: "false",
  });
  const calls = Array.from({ length: count }, (_, i) => flattenedCall(i));
  const state = { next: 0, writeMs: 0, putMs: 0, bytes: 0, files: 0 };

  const start = performance.now();
  const cpu0 = process.cpuUsage();
  await Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      const connection = await instance.connect();
      while (state.next < count) {
        const first = state.next;
        const rows = calls.slice(first, Math.min(first + batch, count));
        state.next += rows.length;
        for (const [table, columns] of Object.entries(tables)) {
          const file = path.join(work, `${lane}-${table}.parquet`);
          const t0 = performance.now();
          const staging = `s_${lane}_${table}`;
          await connection.run(`CREATE OR REPLACE TABLE ${staging} (${columns.map(([n, t]) => `"${n}" ${duckTypes[t]}`).join(", ")})`);
          const appender = await connection.createAppender(staging);
          for (const row of rows) {
            for (const [name, type] of columns) {
              const value = /** @type {Record<string, unknown>} */ (row)[name];
              if (value === null || value === undefined) appender.appendNull();
              else if (type === "bigint") appender.appendBigInt(BigInt(/** @type {number} */ (value)));
              else if (type === "double") appender.appendDouble(/** @type {number} */ (value));
              else if (type === "boolean") appender.appendBoolean(/** @type {boolean} */ (value));
              else appender.appendVarchar(String(value));
            }
            appender.endRow();
          }
          appender.flushSync();
          appender.closeSync();
          const select = columns.map(([n, t]) => (t === "timestamp" ? `CAST("${n}" AS TIMESTAMPTZ) AS "${n}"` : `"${n}"`)).join(", ");
          await connection.run(`COPY (SELECT ${select} FROM ${staging}) TO '${file}' (FORMAT parquet, COMPRESSION zstd)`);
          const t1 = performance.now();
          const body = await readFile(file);
          const key = `bench/${table}/dt=2026-11-22/hr=10/${String(first).padStart(20, "0")}.parquet`;
          await client.send(new PutObjectCommand({ Bucket: "lake", Key: key, Body: body, ContentType: "application/vnd.apache.parquet" }));
          state.writeMs += t1 - t0;
          state.putMs += performance.now() - t1;
          state.bytes += body.length;
          state.files++;
        }
      }
      connection.closeSync();
    }),
  );
  const elapsedMs = performance.now() - start;
  const cpu = process.cpuUsage(cpu0);
  client.destroy();
  instance.closeSync();
  await s3.close();
  rmSync(work, { recursive: true, force: true });
  return {
    scenario: "lake-bare",
    calls: count,
    batch,
    lanes,
    files: state.files,
    bytes: state.bytes,
    elapsed_ms: Math.round(elapsedMs),
    per_s: Math.round((count / elapsedMs) * 1000),
    // Summed over lanes: how the time went, writing files versus uploading them.
    write_ms: Math.round(state.writeMs),
    put_ms: Math.round(state.putMs),
    // This process's CPU (DuckDB's threads included; s3rver runs in this process too).
    cpu_s: Number(((cpu.user + cpu.system) / 1e6).toFixed(2)),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [count, batch, lanes] = process.argv.slice(2);
  if (!count) throw new Error("usage: node bench/lake-bare.mjs COUNT [BATCH=10000] [LANES=2]");
  const result = await lakeBare({ count: Number(count), batch: Number(batch ?? 10_000), lanes: Number(lanes ?? 2) });
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
