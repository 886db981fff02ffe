import { createWriteStream } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import type pg from "pg";
import {
  type AppliedMigration,
  type BackupPartition,
  type BackupTable,
  listAppliedMigrations,
  listBackupTables,
  listPartitions,
  listSequences,
  quoteIdent,
} from "./backup-catalog.js";

// A backup is gzip'd lines. The first is the header (JSON): what made it,
// the migrations applied, the tables in the order a restore fills them, the
// day partitions. Then for each table a line ["table", name] and a line per
// row (its JSON, as row_to_json writes it: every type round-trips through
// its text form); then ["sequences", [...]] and last ["end", {table: rows}].
// Control lines are arrays and rows objects, so neither is mistaken for the
// other, and a file cut short has no end line.

export const backupFormat = "waypost-backup";
export const backupVersion = 1;

export interface BackupHeader {
  format: typeof backupFormat;
  version: number;
  createdAt: string;
  postgres: string;
  migrations: AppliedMigration[];
  tables: BackupTable[];
  partitions: BackupPartition[];
}

export interface BackupSummary {
  file: string;
  bytes: number;
  rows: Record<string, number>;
}

/** Rows read from the database at a time: the memory a backup holds. */
const rowsPerFetch = 1_000;

/**
 * Writes a backup of the database to `file`, online: everything is read in
 * one REPEATABLE READ transaction, a single snapshot, so rows written while
 * it runs are either wholly in it or not at all, and nothing waits for it
 * (the tables are only locked against being dropped or altered). The file
 * appears under its name only when complete.
 */
export async function writeBackup(client: pg.ClientBase, file: string): Promise<BackupSummary> {
  const partial = `${file}.partial`;
  const rows: Record<string, number> = {};
  let bytes = 0;
  await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  try {
    const tables = await listBackupTables(client);
    if (tables.length > 0) await client.query(`LOCK TABLE ${tables.map((t) => quoteIdent(t.name)).join(", ")} IN ACCESS SHARE MODE`);
    const header: BackupHeader = {
      format: backupFormat,
      version: backupVersion,
      createdAt: new Date().toISOString(),
      postgres: (await client.query<{ v: string }>("SHOW server_version")).rows[0]!.v,
      migrations: await listAppliedMigrations(client),
      tables,
      partitions: await listPartitions(client),
    };
    if (header.migrations.length === 0)
      throw new Error("the database has no Waypost tables: nothing to back up (is it the right database?)");
    async function* lines() {
      yield `${JSON.stringify(header)}\n`;
      for (const table of tables) {
        yield `${JSON.stringify(["table", table.name])}\n`;
        rows[table.name] = 0;
        for await (const batch of readRows(client, table.name)) {
          rows[table.name]! += batch.length;
          yield `${batch.join("\n")}\n`;
        }
      }
      yield `${JSON.stringify(["sequences", await listSequences(client)])}\n`;
      yield `${JSON.stringify(["end", rows])}\n`;
    }
    const out = createWriteStream(partial, { mode: 0o600 });
    const gzip = createGzip();
    gzip.on("data", (chunk: Buffer) => (bytes += chunk.length));
    await pipeline(Readable.from(lines()), gzip, out);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    await rm(partial, { force: true });
    throw error;
  }
  await rename(partial, file);
  return { file, bytes, rows };
}

/** A table's rows as JSON texts, a batch at a time, through a cursor. */
async function* readRows(client: pg.ClientBase, table: string): AsyncGenerator<string[]> {
  await client.query(`DECLARE backup_rows NO SCROLL CURSOR FOR SELECT row_to_json(t)::text AS row FROM ${quoteIdent(table)} t`);
  try {
    for (;;) {
      const batch = await client.query<{ row: string }>(`FETCH ${rowsPerFetch} FROM backup_rows`);
      if (batch.rows.length === 0) return;
      yield batch.rows.map((r) => r.row);
    }
  } finally {
    // In a transaction already failing, the cursor goes with its rollback.
    await client.query("CLOSE backup_rows").catch(() => {});
  }
}
