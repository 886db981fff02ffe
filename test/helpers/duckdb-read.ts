import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import type { ObjectStore } from "../../src/lake/object-store.js";

/** What DuckDB reads from lake files: rows as JSON-friendly values, and each column's DuckDB type. */
export interface ReadBack {
  rows: Array<Record<string, unknown>>;
  types: Record<string, string>;
}

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** Runs one query in a fresh in-memory DuckDB (no extension loaded). */
async function query(sql: string): Promise<Array<Record<string, unknown>>> {
  const instance = await DuckDBInstance.create(":memory:", {
    threads: "1",
    autoload_known_extensions: "false",
    autoinstall_known_extensions: "false",
  });
  try {
    const connection = await instance.connect();
    try {
      const reader = await connection.runAndReadAll(sql);
      return reader.getRowObjectsJson() as Array<Record<string, unknown>>;
    } finally {
      connection.closeSync();
    }
  } finally {
    instance.closeSync();
  }
}

/**
 * Reads local lake files as a reader of the lake would: Parquet with
 * read_parquet, NDJSON with read_json (its types inferred, as a reader's
 * would be), columns of all files together by name. Timestamps come back as
 * text in UTC.
 */
export async function readLakeFiles(files: readonly string[], options: { orderBy?: string } = {}): Promise<ReadBack> {
  const list = `[${files.map(literal).join(", ")}]`;
  const source = files.every((f) => f.endsWith(".parquet"))
    ? `read_parquet(${list}, union_by_name = true)`
    : `read_json(${list}, format = 'newline_delimited', union_by_name = true)`;
  const described = await query(`DESCRIBE SELECT * FROM ${source}`);
  const types = Object.fromEntries(described.map((row) => [String(row.column_name), String(row.column_type)]));
  const order = options.orderBy ? ` ORDER BY "${options.orderBy.replaceAll('"', '""')}"` : "";
  const rows = await query(`SELECT * FROM ${source}${order}`);
  return { rows, types };
}

/** The Parquet schema of a file as written (physical and logical types per column), from DuckDB's parquet_schema(). */
export async function parquetColumns(file: string): Promise<Record<string, { type: string; logical: string; converted: string }>> {
  const rows = await query(
    `SELECT name, type, logical_type, converted_type FROM parquet_schema(${literal(file)}) WHERE num_children IS NULL`,
  );
  return Object.fromEntries(
    rows.map((row) => [
      String(row.name),
      { type: String(row.type), logical: String(row.logical_type ?? ""), converted: String(row.converted_type ?? "") },
    ]),
  );
}

/** The compression codec of every column chunk of a Parquet file. */
export async function parquetCodecs(file: string): Promise<string[]> {
  const rows = await query(`SELECT DISTINCT compression FROM parquet_metadata(${literal(file)})`);
  return rows.map((row) => String(row.compression));
}

/** Fetches objects from a store into `directory` (DuckDB's httpfs cannot be installed here), keeping their key paths. */
export async function downloadObjects(store: ObjectStore, keys: readonly string[], directory: string): Promise<string[]> {
  return Promise.all(
    keys.map(async (key) => {
      const file = path.join(directory, ...key.split("/"));
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, await store.get(key));
      return file;
    }),
  );
}
