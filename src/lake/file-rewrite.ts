import { randomUUID } from "node:crypto";
import { rm, writeFile } from "node:fs/promises";
import path from "node:path";
import type { FileContent, FileWriter } from "./file-content.js";
import type { FileReader, LakeFileRow } from "./file-reader.js";
import type { LakeType, LakeValue } from "./lake-types.js";
import { formatFiles, type LakeFormat } from "./object-keys.js";
import type { ObjectStore } from "./object-store.js";

/** What rewriting one file did. */
export interface RewriteResult {
  /** unchanged: no row was dropped (nothing written); rewritten: put again without them; deleted: no row was left. */
  outcome: "unchanged" | "rewritten" | "deleted";
  rowsDropped: number;
}

export interface RewriteOptions {
  store: ObjectStore;
  reader: FileReader;
  /** A writer of the file's format. */
  writer: FileWriter;
  key: string;
  format: LakeFormat;
  /** The type of each column the file may have (registered types, or the archive's); others are typed by their values. */
  types: ReadonlyMap<string, LakeType>;
  /** True for a row to leave out. */
  drop(row: LakeFileRow): boolean;
  /** A directory for the downloaded and the rewritten file (both removed after). */
  workDirectory: string;
  /** Rows read at a time (default 10,000). */
  pageRows?: number;
}

/**
 * Writes a lake object again without the rows `drop` picks, under the same
 * key: the store's put replaces the object whole (S3 and the directory
 * store's rename are atomic), so a reader sees the old file or the new one.
 * A file that loses every row is deleted; one that loses none is not written.
 * The file is read page by page; the rows kept are gathered column by column
 * for the writer, which takes a file's content at once (as the flush that
 * wrote it had it). Doing it again is harmless: the second time finds
 * nothing to drop.
 */
export async function rewriteWithout(options: RewriteOptions): Promise<RewriteResult> {
  const { format } = options;
  const extension = formatFiles[format].extension;
  const original = path.join(options.workDirectory, `${randomUUID()}.${extension}`);
  const rewritten = path.join(options.workDirectory, `${randomUUID()}.${extension}`);
  try {
    await writeFile(original, await options.store.get(options.key));
    const kept = createColumns(options.types);
    let rowsDropped = 0;
    for await (const page of options.reader.read(original, format, { pageRows: options.pageRows })) {
      for (const row of page) {
        if (options.drop(row)) rowsDropped++;
        else kept.add(row);
      }
    }
    if (rowsDropped === 0) return { outcome: "unchanged", rowsDropped };
    if (kept.content.rowCount === 0) {
      await options.store.delete(options.key);
      return { outcome: "deleted", rowsDropped };
    }
    await options.writer.write(kept.content, rewritten);
    await options.store.put(options.key, { path: rewritten }, formatFiles[format].contentType);
    return { outcome: "rewritten", rowsDropped };
  } finally {
    await Promise.all([rm(original, { force: true }), rm(rewritten, { force: true })]);
  }
}

/** Rows gathered column by column, in the file's column order, each column typed once. */
function createColumns(types: ReadonlyMap<string, LakeType>) {
  const columns = new Map<string, LakeType>();
  const values = new Map<string, Array<LakeValue | null>>();
  const content: FileContent & { rowCount: number } = { columns, values, rowCount: 0 };
  return {
    content,
    add(row: LakeFileRow) {
      for (const [name, value] of Object.entries(row)) {
        let column = values.get(name);
        if (!column) {
          columns.set(name, types.get(name) ?? typeOfValue(value));
          values.set(name, (column = new Array<LakeValue | null>(content.rowCount).fill(null)));
        }
        column.push(asColumnValue(columns.get(name)!, value));
      }
      content.rowCount++;
      // A column this row lacks (every row of a file has the file's columns, so only a safeguard) holds null.
      for (const column of values.values()) if (column.length < content.rowCount) column.push(null);
    },
  };
}

/** A column's type from a value, for a column the registry does not know (it always should). */
function typeOfValue(value: LakeValue | null): LakeType {
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "number") return Number.isInteger(value) ? "bigint" : "double";
  return "text";
}

/** A value as its column's writer takes it: text columns take text (a reader may have typed NDJSON text as a number). */
function asColumnValue(type: LakeType, value: LakeValue | null): LakeValue | null {
  if (value === null) return null;
  if ((type === "text" || type === "json" || type === "timestamp") && typeof value !== "string") return String(value);
  return value;
}
