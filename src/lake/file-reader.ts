import type { DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";
import { loadDuckDB } from "./load-duckdb.js";
import { type LakeValue, utcTimestamp } from "./lake-types.js";
import type { LakeFormat } from "./object-keys.js";

/** One row of a lake file as read back: column → value (timestamps as UTC ISO text, JSON columns as their text). */
export type LakeFileRow = Record<string, LakeValue | null>;

/** Reads lake files written by file-writer.ts back, from local paths (a store's object is fetched to one first). */
export interface FileReader {
  /**
   * The rows of a file in pages of at most `pageRows`, in file order, each
   * page with the file's columns: a large file never becomes one array.
   */
  read(file: string, format: LakeFormat, options?: { pageRows?: number }): AsyncGenerator<LakeFileRow[]>;
  close(): Promise<void>;
}

const literal = (text: string) => {
  if (text.includes("\u0000")) throw new Error("path contains a NUL character");
  return `'${text.replaceAll("'", "''")}'`;
};

/**
 * A reader through DuckDB (the library that writes the files): Parquet with
 * read_parquet, NDJSON.gz with read_json with every column read as text
 * first, so a value reads back as it was written whatever DuckDB would
 * infer. Timestamps come back as UTC ISO text (`…Z`), as the writer takes
 * them, so a row read can be written again unchanged (a file rewritten
 * without some of its rows).
 */
export function createFileReader(): FileReader {
  let opened: Promise<{ instance: DuckDBInstance; connection: DuckDBConnection }> | undefined;
  const open = () =>
    (opened ??= (async () => {
      const instance = await (await loadDuckDB()).DuckDBInstance.create(":memory:", {
        threads: "1",
        autoinstall_known_extensions: "false",
        autoload_known_extensions: "false",
        memory_limit: "256MB",
      });
      return { instance, connection: await instance.connect() };
    })());

  return {
    async *read(file, format, options = {}) {
      const { connection } = await open();
      const source =
        format === "parquet"
          ? `read_parquet(${literal(file)})`
          : `read_json(${literal(file)}, format = 'newline_delimited', compression = 'gzip')`;
      const described = await connection.runAndReadAll(`DESCRIBE SELECT * FROM ${source}`);
      const columns = described.getRowObjectsJson().map((row) => ({ name: String(row.column_name), type: String(row.column_type) }));
      // Timestamps as the writer's text (UTC, microseconds when there are any); the rest as DuckDB hands them to JS.
      const select = columns
        .map(({ name, type }) => {
          const quoted = `"${name.replaceAll('"', '""')}"`;
          // Without ICU (not built in), a TIMESTAMPTZ cast to TIMESTAMP is its UTC time.
          return type.startsWith("TIMESTAMP") ? `strftime(${quoted}::TIMESTAMP, '%Y-%m-%dT%H:%M:%S.%fZ') AS ${quoted}` : quoted;
        })
        .join(", ");
      const result = await connection.stream(`SELECT ${select} FROM ${source}`);
      const pageRows = options.pageRows ?? 10_000;
      let page: LakeFileRow[] = [];
      for await (const rows of result.yieldRowObjectJs()) {
        for (const row of rows) {
          const out: LakeFileRow = {};
          for (const { name, type } of columns) {
            const value = toLakeValue(row[name]);
            out[name] = type.startsWith("TIMESTAMP") && typeof value === "string" ? utcTimestamp(value) : value;
          }
          page.push(out);
          if (page.length >= pageRows) {
            yield page;
            page = [];
          }
        }
      }
      if (page.length > 0) yield page;
    },
    async close() {
      if (!opened) return;
      const { instance, connection } = await opened;
      connection.closeSync();
      instance.closeSync();
      opened = undefined;
    },
  };
}

/** A DuckDB value as the writer takes it: bigints as numbers (the writer's are safe integers), the rest as they are. */
function toLakeValue(value: unknown): LakeValue | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "bigint") return Number(value);
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "string") return value;
  return String(value);
}
