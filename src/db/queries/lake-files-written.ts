import type { Queryable } from "../pool.js";

/** A file a lake destination stored: its key, rows and size. */
export interface LakeFileWritten {
  key: string;
  rows: number;
  bytes: number;
}

/** What a lake destination has written: totals, and its last file. */
export interface LakeFilesWrittenRow {
  files: string;
  rows: string;
  bytes: string;
  last_file: string;
  last_file_rows: string;
  last_file_bytes: string;
  last_file_at: Date;
}

/** Adds a flush's files to the destination's totals, the last of them as its last file (one statement). */
export async function recordLakeFilesWritten(
  db: Queryable,
  destinationId: string,
  files: readonly LakeFileWritten[],
  at: Date,
): Promise<void> {
  const last = files.at(-1);
  if (!last) return;
  const rows = files.reduce((sum, f) => sum + f.rows, 0);
  const bytes = files.reduce((sum, f) => sum + f.bytes, 0);
  await db.query(
    `INSERT INTO lake_files_written AS w (destination_id, files, rows, bytes, last_file, last_file_rows, last_file_bytes, last_file_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (destination_id) DO UPDATE
       SET files = w.files + excluded.files, rows = w.rows + excluded.rows, bytes = w.bytes + excluded.bytes,
           last_file = excluded.last_file, last_file_rows = excluded.last_file_rows,
           last_file_bytes = excluded.last_file_bytes, last_file_at = excluded.last_file_at`,
    [destinationId, files.length, rows, bytes, last.key, last.rows, last.bytes, at],
  );
}

/** The destination's files written; undefined when it has written none (or is not a lake). */
export async function selectLakeFilesWritten(db: Queryable, destinationId: string): Promise<LakeFilesWrittenRow | undefined> {
  const result = await db.query<LakeFilesWrittenRow>("SELECT * FROM lake_files_written WHERE destination_id = $1", [destinationId]);
  return result.rows[0];
}
