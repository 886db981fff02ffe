import type { LakeType, LakeValue } from "./lake-types.js";
import type { LakeFormat } from "./object-keys.js";

/**
 * What goes into one file: one table's rows, column by column (a page of
 * calls makes one, and a value per cell costs an array slot, not a map
 * entry). `values.get(column)[row]`; a row without the column holds null or
 * nothing there.
 */
export interface FileContent {
  columns: ReadonlyMap<string, LakeType>;
  rowCount: number;
  values: ReadonlyMap<string, ReadonlyArray<LakeValue | null | undefined>>;
}

/** Writes lake files to local paths, to be uploaded from there (a file is never read whole to upload it). */
export interface FileWriter {
  readonly format: LakeFormat;
  /** Writes the rows to `file` (replacing it); the file's size in bytes. */
  write(content: FileContent, file: string): Promise<number>;
  close(): Promise<void>;
}

/** A file's content from rows of column → value (tests, and anything small). */
export function contentOfRows(
  columns: ReadonlyMap<string, LakeType>,
  rows: ReadonlyArray<ReadonlyMap<string, LakeValue | null>>,
): FileContent {
  const values = new Map<string, Array<LakeValue | null>>(
    [...columns.keys()].map((name) => [name, rows.map((row) => row.get(name) ?? null)]),
  );
  return { columns, rowCount: rows.length, values };
}

/** A file's rows as maps of column → value (a value that did not fit is null; a column the row lacks is absent): for tests. */
export function rowsOf(content: FileContent): Array<Map<string, LakeValue | null>> {
  return Array.from({ length: content.rowCount }, (_, i) => {
    const row = new Map<string, LakeValue | null>();
    for (const name of content.columns.keys()) {
      const value = content.values.get(name)?.[i];
      if (value !== undefined) row.set(name, value);
    }
    return row;
  });
}
