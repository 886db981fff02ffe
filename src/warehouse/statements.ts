import { type ColumnType, coerce } from "./column-types.js";
import { qualified, quoteIdent } from "./identifiers.js";
import type { TableRow, WarehouseChange } from "./layout.js";

/** A parameterised statement: every value is a parameter, every name a quoted identifier. */
export interface Statement {
  text: string;
  values: unknown[];
}

/** Where column types come from (the schema as this process knows it). */
export interface ColumnTypes {
  typeOf(table: string, column: string): ColumnType | undefined;
}

/** The statements of a batch, and how many values did not fit their columns (stored as NULL). */
export interface BatchStatements {
  statements: Statement[];
  mismatches: number;
  /** Users whose rows a delete notification removes (after the inserts of the same batch). */
  deletedUsers: string[];
}

/**
 * The statements that load a batch of changes: per table one INSERT of all
 * its rows, one array parameter per column through unnest (so a batch is
 * one round trip per table, whatever its size, and no value is ever SQL
 * text), `ON CONFLICT (id) DO NOTHING` so a retried batch adds nothing twice;
 * users merged per user id, the latest call's traits winning.
 */
export function batchStatements(schema: string, changes: readonly WarehouseChange[], types: ColumnTypes): BatchStatements {
  const byTable = new Map<string, TableRow[]>();
  const users = new Map<string, TableRow>();
  const deletedUsers: string[] = [];
  for (const change of changes) {
    if (change.kind === "delete") {
      deletedUsers.push(change.userId);
      continue;
    }
    for (const row of change.rows) {
      let rows = byTable.get(row.table);
      if (!rows) byTable.set(row.table, (rows = []));
      rows.push(row);
    }
    if (change.user) mergeUser(users, change.user);
  }
  let mismatches = 0;
  const statements: Statement[] = [];
  for (const [table, rows] of byTable) {
    const built = insertStatement(schema, table, rows, types, "ON CONFLICT (id) DO NOTHING");
    mismatches += built.mismatches;
    statements.push(built.statement);
  }
  if (users.size > 0) {
    const rows = [...users.values()];
    const built = insertStatement(schema, "users", rows, types, (columns) => userConflict(columns));
    mismatches += built.mismatches;
    statements.push(built.statement);
  }
  return { statements, mismatches, deletedUsers };
}

/** A later identify's traits win over an earlier one's in the same batch; traits it lacks are kept. */
function mergeUser(users: Map<string, TableRow>, row: TableRow) {
  const id = row.cells.get("id")!.value as string;
  const earlier = users.get(id);
  if (!earlier) users.set(id, { table: row.table, cells: new Map(row.cells) });
  else for (const [name, cell] of row.cells) earlier.cells.set(name, cell);
}

/**
 * users: a traits column a call does not carry keeps its value; a call
 * received before the row's last one changes nothing (a retried old
 * identify does not undo a newer one).
 */
function userConflict(columns: readonly string[]): string {
  const sets = columns
    .filter((c) => c !== "id")
    .map((c) => `${quoteIdent(c)} = coalesce(EXCLUDED.${quoteIdent(c)}, ${quoteIdent("users")}.${quoteIdent(c)})`);
  if (sets.length === 0) return "ON CONFLICT (id) DO NOTHING";
  return `ON CONFLICT (id) DO UPDATE SET ${sets.join(", ")}
    WHERE ${quoteIdent("users")}.received_at IS NULL OR EXCLUDED.received_at IS NULL OR EXCLUDED.received_at >= ${quoteIdent("users")}.received_at`;
}

function insertStatement(
  schema: string,
  table: string,
  rows: readonly TableRow[],
  types: ColumnTypes,
  conflict: string | ((columns: string[]) => string),
): { statement: Statement; mismatches: number } {
  // Columns the schema has (a column that could not be added is left out).
  const columns: string[] = [];
  const seen = new Set<string>();
  for (const row of rows) {
    for (const name of row.cells.keys()) {
      if (!seen.has(name) && types.typeOf(table, name)) columns.push(name);
      seen.add(name);
    }
  }
  let mismatches = 0;
  const arrays = columns.map((column) => {
    const type = types.typeOf(table, column)!;
    return rows.map((row) => {
      const cell = row.cells.get(column);
      if (!cell) return null;
      const coerced = coerce(cell.value, type);
      if (coerced.ok) return coerced.value;
      mismatches++;
      return null;
    });
  });
  const casts = columns.map((column, i) => `$${i + 1}::${types.typeOf(table, column)}[]`);
  const text = `INSERT INTO ${qualified(schema, table)} (${columns.map(quoteIdent).join(", ")})
    SELECT * FROM unnest(${casts.join(", ")}) ${typeof conflict === "string" ? conflict : conflict(columns)}`;
  return { statement: { text, values: arrays }, mismatches };
}

/** Deletes a user's rows from every table that has a user column. */
export function deleteStatements(
  schema: string,
  tables: ReadonlyArray<{ table: string; column: string }>,
  userIds: readonly string[],
): Statement[] {
  return tables.map(({ table, column }) => ({
    text: `DELETE FROM ${qualified(schema, table)} WHERE ${quoteIdent(column)} = ANY ($1::text[])`,
    values: [userIds],
  }));
}
