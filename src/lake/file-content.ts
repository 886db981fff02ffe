import type { LakeType, LakeValue } from "./lake-types.js";
import type { LakeFormat } from "./object-keys.js";

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
