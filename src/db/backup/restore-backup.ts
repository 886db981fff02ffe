import { createReadStream } from "node:fs";
import { copyFile, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { createGunzip } from "node:zlib";
import type pg from "pg";
import { migrate } from "postgres-migrations";
import { migrationsDirectory } from "../migrate.js";
import { type BackupSequence, type BackupTable, listAppliedMigrations, quoteIdent } from "./backup-catalog.js";
import { backupFormat, backupVersion, type BackupHeader } from "./write-backup.js";

/** A restore refused before anything was written: the reason says what to do. */
export class RestoreRefused extends Error {
  override name = "RestoreRefused";
}

export interface RestoreOptions {
  /** Replace what the database holds (without it, a database with rows is refused). */
  force?: boolean;
}

export interface RestoreSummary {
  rows: Record<string, number>;
  /** Rows the database held that --force replaced, by table. */
  replaced: Record<string, number>;
}

/** Rows written per INSERT, and their most bytes (a row may be large): the memory a restore holds. */
const rowsPerInsert = 1_000;
const bytesPerInsert = 8 * 1024 * 1024;

/**
 * Restores a backup written by writeBackup into the database: its schema is
 * made by the migrations the backup's database had applied (a newer Waypost
 * applies its own at its next start), then every row goes in, in one
 * transaction: a restore that fails (a file cut short, say) leaves no rows.
 */
export async function restoreBackup(client: pg.ClientBase, file: string, options: RestoreOptions = {}): Promise<RestoreSummary> {
  const lines = createInterface({ input: createReadStream(file).pipe(createGunzip()), crlfDelay: Number.POSITIVE_INFINITY })[
    Symbol.asyncIterator
  ]();
  try {
    const first = await lines.next();
    const header = parseHeader(first.done ? "" : first.value, file);
    await migrateLike(client, header);
    await client.query("BEGIN");
    try {
      const replaced = await makeRoom(client, header.tables, options.force === true);
      await createPartitions(client, header);
      const rows = await writeRows(client, header, lines, file);
      await client.query("COMMIT");
      return { rows, replaced };
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      throw error;
    }
  } finally {
    await lines.return?.();
  }
}

function parseHeader(line: string, file: string): BackupHeader {
  let header: Partial<BackupHeader> | undefined;
  try {
    header = JSON.parse(line) as Partial<BackupHeader>;
  } catch {
    // Reported below.
  }
  if (header?.format !== backupFormat) throw new RestoreRefused(`${file} is not a Waypost backup (made by waypost backup)`);
  if (header.version !== backupVersion) {
    throw new RestoreRefused(`${file} is a backup of format version ${header.version}; this Waypost reads version ${backupVersion}`);
  }
  return header as BackupHeader;
}

/** The migration files of this Waypost, by id. */
async function knownMigrations(): Promise<Map<number, { file: string; name: string }>> {
  const known = new Map<number, { file: string; name: string }>();
  for (const file of await readdir(migrationsDirectory)) {
    const match = /^(\d+)[_-](.+)\.sql$/.exec(file);
    if (match) known.set(Number(match[1]), { file, name: match[2]! });
  }
  return known;
}

/**
 * Brings the database to the backup's schema: the migrations it had, not
 * this Waypost's newer ones (those run at the next start, over the rows). A
 * database already past it, or a backup from a newer Waypost, is refused.
 */
async function migrateLike(client: pg.ClientBase, header: BackupHeader): Promise<void> {
  const known = await knownMigrations();
  // Migration 0 is postgres-migrations' own (its table), in every database it migrated.
  const unknown = header.migrations.find((m) => m.id > 0 && known.get(m.id)?.name !== m.name);
  if (unknown) {
    throw new RestoreRefused(
      `the backup was made by a newer Waypost (its migration ${unknown.id} ${unknown.name} is not one of this version's): restore it with that version or later`,
    );
  }
  const last = Math.max(...header.migrations.map((m) => m.id));
  const ahead = (await listAppliedMigrations(client)).find((m) => m.id > last);
  if (ahead) {
    throw new RestoreRefused(
      `the database has migrations the backup's had not (${ahead.id} ${ahead.name}): restore into an empty database, or with the Waypost version that made the backup`,
    );
  }
  const subset = await mkdtemp(path.join(tmpdir(), "waypost-restore-migrations-"));
  try {
    for (const [id, { file }] of known) if (id <= last) await copyFile(path.join(migrationsDirectory, file), path.join(subset, file));
    await migrate({ client: client as pg.Client }, subset);
  } finally {
    await rm(subset, { recursive: true, force: true });
  }
}

/** Refuses a database with rows (naming the tables), or with --force empties the backup's tables. */
async function makeRoom(client: pg.ClientBase, tables: readonly BackupTable[], force: boolean): Promise<Record<string, number>> {
  const held: Record<string, number> = {};
  for (const { name } of tables) {
    const count = await client.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${quoteIdent(name)}`);
    if (count.rows[0]!.n !== "0") held[name] = Number(count.rows[0]!.n);
  }
  if (Object.keys(held).length === 0) return held;
  if (!force) {
    const list = Object.entries(held)
      .map(([name, n]) => `${name} (${n} ${n === 1 ? "row" : "rows"})`)
      .join(", ");
    throw new RestoreRefused(
      `the database is not empty: it holds ${list}. Restore into an empty database, or pass --force to replace all of it with the backup`,
    );
  }
  // The audit log refuses a TRUNCATE but in a transaction that says it replaces the log.
  await client.query("SELECT set_config('waypost.audit_purge', 'on', true)");
  await client.query(`TRUNCATE ${tables.map((t) => quoteIdent(t.name)).join(", ")}`);
  return held;
}

/** The day partitions the backup had (retention may have dropped them here, or they were never made). */
async function createPartitions(client: pg.ClientBase, header: BackupHeader): Promise<void> {
  for (const { parent, name, bound } of header.partitions) {
    const exists = await client.query<{ exists: boolean }>("SELECT to_regclass($1) IS NOT NULL AS exists", [quoteIdent(name)]);
    if (!exists.rows[0]!.exists) await client.query(`CREATE TABLE ${quoteIdent(name)} PARTITION OF ${quoteIdent(parent)} ${bound}`);
  }
}

/** Reads the rows and control lines after the header, inserting in batches. */
async function writeRows(
  client: pg.ClientBase,
  header: BackupHeader,
  lines: AsyncIterator<string>,
  file: string,
): Promise<Record<string, number>> {
  const tables = new Map(header.tables.map((t) => [t.name, t]));
  const rows: Record<string, number> = {};
  let table: BackupTable | undefined;
  let batch: string[] = [];
  let batchBytes = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    await insertRows(client, table!, batch);
    rows[table!.name] = (rows[table!.name] ?? 0) + batch.length;
    batch = [];
    batchBytes = 0;
  };
  for (let next = await lines.next(); !next.done; next = await lines.next()) {
    const line = next.value;
    if (line.startsWith("{")) {
      if (!table) throw new RestoreRefused(`${file}: a row before any table: the file is damaged`);
      batch.push(line);
      batchBytes += line.length;
      if (batch.length >= rowsPerInsert || batchBytes >= bytesPerInsert) await flush();
      continue;
    }
    await flush();
    const [kind, value] = JSON.parse(line) as [string, unknown];
    if (kind === "table") {
      table = tables.get(value as string);
      if (!table) throw new RestoreRefused(`${file}: rows of a table the header does not list (${String(value)}): the file is damaged`);
      rows[table.name] = 0;
    } else if (kind === "sequences") await setSequences(client, value as BackupSequence[]);
    else if (kind === "end") {
      checkCounts(rows, value as Record<string, number>, file);
      return rows;
    }
  }
  throw new RestoreRefused(`${file} ends early: it is not a whole backup (cut off while written or copied?); nothing was restored`);
}

async function insertRows(client: pg.ClientBase, table: BackupTable, rows: readonly string[]): Promise<void> {
  const columns = table.columns.map(quoteIdent).join(", ");
  await client.query(
    `INSERT INTO ${quoteIdent(table.name)} (${columns}) ${table.identityAlways ? "OVERRIDING SYSTEM VALUE " : ""}` +
      `SELECT ${columns} FROM json_populate_recordset(NULL::${quoteIdent(table.name)}, $1::json)`,
    [`[${rows.join(",")}]`],
  );
}

async function setSequences(client: pg.ClientBase, sequences: readonly BackupSequence[]): Promise<void> {
  for (const { name, lastValue, isCalled } of sequences) {
    await client.query("SELECT setval($1::regclass, $2::bigint, $3)", [quoteIdent(name), lastValue, isCalled]);
  }
}

function checkCounts(rows: Record<string, number>, expected: Record<string, number>, file: string): void {
  for (const [name, count] of Object.entries(expected)) {
    if ((rows[name] ?? 0) !== count) {
      throw new RestoreRefused(
        `${file}: ${name} should have ${count} rows and has ${rows[name] ?? 0}: the file is damaged; nothing was restored`,
      );
    }
  }
}
