import { createNdjsonGzWriter } from "./ndjson-gz-writer.js";
import type { LakeFormat } from "./object-keys.js";
import { createParquetWriter } from "./parquet-writer.js";
import type { FileWriter } from "./file-content.js";

export type { FileContent, FileWriter } from "./file-content.js";

export interface FileWriterOptions {
  format: LakeFormat;
  /** Threads DuckDB may use per Parquet file (default 1: the writer runs beside the server's own work). */
  threads?: number;
}

/** A writer for the format: Parquet through DuckDB (zstd), or NDJSON gzipped in plain Node. */
export function createFileWriter(options: FileWriterOptions): FileWriter {
  return options.format === "parquet" ? createParquetWriter({ threads: options.threads ?? 1 }) : createNdjsonGzWriter();
}
