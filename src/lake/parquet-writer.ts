import type { DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";
import { loadDuckDB } from "./load-duckdb.js";
import { stat } from "node:fs/promises";
import { quoteIdent } from "../warehouse/identifiers.js";
import type { FileContent, FileWriter } from "./file-content.js";
import type { LakeType } from "./lake-types.js";

// The DuckDB type of each lake type in the staging table. Timestamps are
// staged as text (canonical UTC ISO, see utcTimestamp) and cast while copying:
// measured, DuckDB's cast is faster than building a timestamp value per cell in JS.
const stagingTypes: Record<LakeType, string> = {
  bigint: "BIGINT",
  double: "DOUBLE",
  boolean: "BOOLEAN",
  timestamp: "VARCHAR",
  text: "VARCHAR",
  json: "VARCHAR",
};

/**
 * Parquet files (zstd) written by DuckDB: the rows go into a table of an
 * in-memory database through DuckDB's appender, then `COPY … TO` writes the
 * file. The Parquet types are INT64, DOUBLE, BOOLEAN, TIMESTAMP (UTC,
 * microseconds) and STRING (text and JSON text); docs/lakes.md has the
 * table. DuckDB starts on the first write; writes run one at a time (the
 * appender is synchronous JS anyway, and the copy uses `threads`).
 */
export function createParquetWriter(options: { threads: number }): FileWriter {
  let connection: Promise<{ instance: DuckDBInstance; connection: DuckDBConnection }> | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  let serial = 0;

  function connect() {
    connection ??= (async () => {
      // No extension is ever loaded (or downloaded): Parquet is built in.
      const instance = await (await loadDuckDB()).DuckDBInstance.create(":memory:", {
        threads: String(options.threads),
        autoinstall_known_extensions: "false",
        autoload_known_extensions: "false",
        // A staging table is a page of calls: DuckDB keeps what it frees up to its flush threshold (128 MB by
        // default) and may grow to 80% of the machine. Bounded here, the service's memory stays the service's.
        memory_limit: "256MB",
        allocator_flush_threshold: "8MB",
      });
      return { instance, connection: await instance.connect() };
    })();
    return connection;
  }

  async function writeNow(content: FileContent, file: string): Promise<number> {
    const { connection: db } = await connect();
    const table = `staging_${++serial}`;
    const columns = [...content.columns];
    if (columns.length === 0) throw new Error("a lake file needs at least one column");
    await db.run(
      `CREATE TABLE ${quoteIdent(table)} (${columns.map(([name, type]) => `${quoteIdent(name)} ${stagingTypes[type]}`).join(", ")})`,
    );
    try {
      const appender = await db.createAppender(table);
      try {
        // Column by column as stored; the appender takes a row at a time.
        const cells = columns.map(([name, type]) => ({ type, values: content.values.get(name) ?? [] }));
        for (let row = 0; row < content.rowCount; row++) {
          for (const { type, values } of cells) {
            const value = values[row];
            if (value === null || value === undefined) appender.appendNull();
            else if (type === "bigint") appender.appendBigInt(BigInt(value as number));
            else if (type === "double") appender.appendDouble(value as number);
            else if (type === "boolean") appender.appendBoolean(value as boolean);
            else appender.appendVarchar(value as string);
          }
          appender.endRow();
        }
        appender.flushSync();
      } finally {
        appender.closeSync();
      }
      const select = columns
        .map(([name, type]) =>
          type === "timestamp" ? `CAST(${quoteIdent(name)} AS TIMESTAMPTZ) AS ${quoteIdent(name)}` : quoteIdent(name),
        )
        .join(", ");
      await db.run(`COPY (SELECT ${select} FROM ${quoteIdent(table)}) TO ${sqlText(file)} (FORMAT parquet, COMPRESSION zstd)`);
    } finally {
      await db.run(`DROP TABLE IF EXISTS ${quoteIdent(table)}`);
    }
    return (await stat(file)).size;
  }

  return {
    format: "parquet",
    write(content, file) {
      const done = queue.then(() => writeNow(content, file));
      queue = done.catch(() => {});
      return done;
    },
    async close() {
      await queue;
      if (!connection) return;
      const { instance, connection: db } = await connection;
      db.closeSync();
      instance.closeSync();
      connection = undefined;
    },
  };
}

/** A string literal for DuckDB SQL. */
function sqlText(text: string): string {
  if (text.includes("\u0000")) throw new Error("path contains a NUL character");
  return `'${text.replaceAll("'", "''")}'`;
}
