import { createNdjsonGzWriter } from "./ndjson-gz-writer.js";
import type { LakeFormat } from "./object-keys.js";
import { createParquetWriter } from "./parquet-writer.js";
import type { LakeType, LakeValue } from "./lake-types.js";

/** What goes into one file: one table's rows, each a map of column to value (a missing column is null). */
export interface FileContent {
  columns: ReadonlyMap<string, LakeType>;
  rows: ReadonlyArray<ReadonlyMap<string, LakeValue | null>>;
}

/** Writes lake files to local paths, to be uploaded from there (a file is never read whole to upload it). */
export interface FileWriter {
  readonly format: LakeFormat;
  /** Writes the rows to `file` (replacing it); the file's size in bytes. */
  write(content: FileContent, file: string): Promise<number>;
  close(): Promise<void>;
}

export interface FileWriterOptions {
  format: LakeFormat;
  /** Threads DuckDB may use per Parquet file (default 1: the writer runs beside the server's own work). */
  threads?: number;
}

/** A writer for the format: Parquet through DuckDB (zstd), or NDJSON gzipped in plain Node. */
export function createFileWriter(options: FileWriterOptions): FileWriter {
  return options.format === "parquet" ? createParquetWriter({ threads: options.threads ?? 1 }) : createNdjsonGzWriter();
}
