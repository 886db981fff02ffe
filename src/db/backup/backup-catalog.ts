import type { Queryable } from "../pool.js";

// What a backup holds and a restore fills, read from the catalog of the
// current schema: so a table added by a later migration is backed up
// without a change here.

/** A table whose rows a backup holds: an ordinary table, or a partitioned one (its partitions' rows together). */
export interface BackupTable {
  name: string;
  /** Columns a restore writes (generated ones are computed again). */
  columns: string[];
  /** Has a GENERATED ALWAYS identity column: its stored values are written over the generator. */
  identityAlways: boolean;
}

/** A partition of a partitioned table (a day of the delivery history), created again before rows go in. */
export interface BackupPartition {
  parent: string;
  name: string;
  /** `FOR VALUES FROM (...) TO (...)`, as Postgres prints it. */
  bound: string;
}

export interface BackupSequence {
  name: string;
  lastValue: string;
  isCalled: boolean;
}

export interface AppliedMigration {
  id: number;
  name: string;
  hash: string;
}

/** The migrations' own bookkeeping: a restore creates it by running the migrations. */
export const migrationsTable = "migrations";

/**
 * The tables with rows of their own (not partitions), in an order that puts
 * every table after the tables its foreign keys point to, so that a restore
 * inserting in this order never breaks a key.
 */
export async function listBackupTables(db: Queryable): Promise<BackupTable[]> {
  const tables = await db.query<{ name: string; columns: string[]; identity_always: boolean }>(
    `SELECT c.relname::text AS name,
            array_agg(a.attname::text ORDER BY a.attnum) FILTER (WHERE a.attgenerated = '') AS columns,
            bool_or(a.attidentity = 'a') AS identity_always
       FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relname <> $1
      GROUP BY c.relname
      ORDER BY c.relname`,
    [migrationsTable],
  );
  const keys = await db.query<{ child: string; parent: string }>(
    `SELECT DISTINCT child.relname AS child, parent.relname AS parent
       FROM pg_constraint k
       JOIN pg_class child ON child.oid = k.conrelid
       JOIN pg_class parent ON parent.oid = k.confrelid
       JOIN pg_namespace n ON n.oid = child.relnamespace
      WHERE k.contype = 'f' AND n.nspname = current_schema() AND child.oid <> parent.oid AND NOT child.relispartition`,
  );
  const byName = new Map(tables.rows.map((t) => [t.name, { name: t.name, columns: t.columns, identityAlways: t.identity_always }]));
  const parents = new Map<string, string[]>();
  for (const { child, parent } of keys.rows) parents.set(child, [...(parents.get(child) ?? []), parent]);
  const ordered: BackupTable[] = [];
  const placed = new Set<string>();
  const place = (name: string, path: readonly string[]) => {
    if (placed.has(name) || path.includes(name)) return;
    for (const parent of parents.get(name) ?? []) place(parent, [...path, name]);
    placed.add(name);
    const table = byName.get(name);
    if (table) ordered.push(table);
  };
  for (const name of byName.keys()) place(name, []);
  return ordered;
}

/** The partitions with a range (DEFAULT partitions come with the migrations). */
export async function listPartitions(db: Queryable): Promise<BackupPartition[]> {
  const result = await db.query<BackupPartition>(
    `SELECT parent.relname AS parent, c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
       FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_inherits i ON i.inhrelid = c.oid
       JOIN pg_class parent ON parent.oid = i.inhparent
      WHERE n.nspname = current_schema() AND c.relispartition AND pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT'
      ORDER BY 2`,
  );
  return result.rows;
}

/** Every sequence's position (ids of calls, webhook requests, deliveries). */
export async function listSequences(db: Queryable): Promise<BackupSequence[]> {
  const names = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND c.relkind = 'S' ORDER BY 1`,
  );
  const sequences: BackupSequence[] = [];
  for (const { name } of names.rows) {
    const row = await db.query<{ last_value: string; is_called: boolean }>(`SELECT last_value::text, is_called FROM ${quoteIdent(name)}`);
    sequences.push({ name, lastValue: row.rows[0]!.last_value, isCalled: row.rows[0]!.is_called });
  }
  return sequences;
}

/** The migrations applied, oldest first; none in a database never migrated. */
export async function listAppliedMigrations(db: Queryable): Promise<AppliedMigration[]> {
  const exists = await db.query<{ exists: boolean }>("SELECT to_regclass($1) IS NOT NULL AS exists", [migrationsTable]);
  if (!exists.rows[0]?.exists) return [];
  const result = await db.query<AppliedMigration>(`SELECT id, name, hash FROM ${migrationsTable} ORDER BY id`);
  return result.rows;
}

/** A name as an SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
