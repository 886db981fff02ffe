import { arrayLiteral } from "./array-literal.js";
import { type ColumnType, fitToColumn, Misfit } from "./column-types.js";
import { qualified, quoteIdent } from "./identifiers.js";
import { discardsTable, type TableRow, type WarehouseChange } from "./layout.js";

/** A parameterised statement: every value is a parameter, every name a quoted identifier. */
export interface Statement {
  text: string;
  values: unknown[];
}

/** Where column types come from (the schema as this process knows it). */
export interface ColumnTypes {
  typeOf(table: string, column: string): ColumnType | undefined;
  /** Why a column is not in its table, when that is known. */
  refusal(table: string, column: string): string | undefined;
}

/** A value that could not be stored in its column: kept in the discards table, and told on its call's attempt. */
export interface Discard {
  /** The index of its change in the batch. */
  origin: number;
  table: string;
  column: string;
  value: unknown;
  reason: string;
  /** A type mismatch (the column exists and holds NULL), or a column that could not be added. */
  kind: "type" | "column";
}

/** The statements of a batch, and what of it could not be stored in its columns. */
export interface BatchStatements {
  statements: Statement[];
  discards: Discard[];
  /** Users whose rows a delete notification removes (after the inserts of the same batch). */
  deletedUsers: string[];
}

/** A row of the batch and the change it comes from (per cell for a merged users row). */
interface SourcedRow {
  row: TableRow;
  origin: number;
  cellOrigins?: Map<string, number>;
}

/**
 * The statements that load a batch of changes: per table one INSERT of all
 * its rows, one array parameter per column through unnest (so a batch is
 * one round trip per table, whatever its size, and no value is ever SQL
 * text), `ON CONFLICT (id) DO NOTHING` so a retried batch adds nothing twice;
 * users merged per user id, the latest call's traits winning; then what
 * could not be stored into the discards table.
 */
export function batchStatements(schema: string, changes: readonly WarehouseChange[], types: ColumnTypes): BatchStatements {
  const byTable = new Map<string, SourcedRow[]>();
  const users = new Map<string, SourcedRow>();
  const deletedUsers: string[] = [];
  changes.forEach((change, origin) => {
    if (change.kind === "delete") {
      deletedUsers.push(change.userId);
      return;
    }
    for (const row of change.rows) {
      let rows = byTable.get(row.table);
      if (!rows) byTable.set(row.table, (rows = []));
      rows.push({ row, origin });
    }
    if (change.user) mergeUser(users, change.user, origin);
  });
  const discards: Discard[] = [];
  const statements: Statement[] = [];
  for (const [table, rows] of byTable) {
    statements.push(insertStatement(schema, table, rows, types, "ON CONFLICT (id) DO NOTHING", discards));
  }
  if (users.size > 0) {
    statements.push(insertStatement(schema, "users", [...users.values()], types, (columns) => userConflict(columns), discards));
  }
  if (discards.length > 0) statements.push(discardsStatement(schema, changes, discards));
  return { statements, discards, deletedUsers };
}

/** A later identify's traits win over an earlier one's in the same batch; traits it lacks are kept. */
function mergeUser(users: Map<string, SourcedRow>, row: TableRow, origin: number) {
  const id = row.cells.get("id")!.value as string;
  let merged = users.get(id);
  if (!merged) users.set(id, (merged = { row: { table: row.table, cells: new Map() }, origin, cellOrigins: new Map() }));
  merged.origin = origin;
  for (const [name, cell] of row.cells) {
    merged.row.cells.set(name, cell);
    merged.cellOrigins!.set(name, origin);
  }
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
  rows: readonly SourcedRow[],
  types: ColumnTypes,
  conflict: string | ((columns: string[]) => string),
  discards: Discard[],
): Statement {
  // Columns the schema has; a column that could not be added is left out, its values discarded.
  const columns: string[] = [];
  const seen = new Set<string>();
  for (const { row, origin, cellOrigins } of rows) {
    for (const [name, cell] of row.cells) {
      if (!seen.has(name)) {
        seen.add(name);
        if (types.typeOf(table, name)) {
          columns.push(name);
          continue;
        }
      } else if (types.typeOf(table, name)) continue;
      const reason = types.refusal(table, name) ?? "the column could not be added";
      discards.push({ origin: cellOrigins?.get(name) ?? origin, table, column: name, value: cell.value, reason, kind: "column" });
    }
  }
  const arrays = columns.map((column) => {
    const type = types.typeOf(table, column)!;
    const values = rows.map(({ row, origin, cellOrigins }) => {
      const cell = row.cells.get(column);
      if (!cell) return null;
      const fitted = fitToColumn(cell.value, type);
      if (!(fitted instanceof Misfit)) return fitted;
      discards.push({ origin: cellOrigins?.get(column) ?? origin, table, column, value: cell.value, reason: fitted.reason, kind: "type" });
      return null;
    });
    return arrayLiteral(values);
  });
  const casts = columns.map((column, i) => `$${i + 1}::${types.typeOf(table, column)}[]`);
  const text = `INSERT INTO ${qualified(schema, table)} (${columns.map(quoteIdent).join(", ")})
    SELECT * FROM unnest(${casts.join(", ")}) ${typeof conflict === "string" ? conflict : conflict(columns)}`;
  return { text, values: arrays };
}

/** Discard rows per table row at most; the rest of that row's discards share one more row (column `*`). */
export const maxDiscardRowsPerRow = 50;

/**
 * The discards as rows of the discards table, one per (table, row, column):
 * a retried batch, or a user identified twice, rewrites its row rather than
 * adding another. Values are text (JSON for anything but a string). A row
 * with more than 50 discards (a flood of new keys past the cap) gets one
 * more row, column `*`, holding the rest as one JSON object (column →
 * value): every value stays visible, and a flood cannot multiply the rows.
 */
function discardsStatement(schema: string, changes: readonly WarehouseChange[], discards: readonly Discard[]): Statement {
  const rows = new Map<string, Array<string | null>>();
  const perRow = new Map<string, number>();
  const overflow = new Map<string, { row: Array<string | null>; values: Map<string, unknown> }>();
  for (const d of discards) {
    const change = changes[d.origin]!;
    if (change.kind !== "rows") continue;
    const source = d.table === "users" ? change.user : change.rows.find((r) => r.table === d.table);
    const cell = (name: string) => (source?.cells.get(name)?.value as string | undefined) ?? null;
    const rowId = cell("id") ?? change.id;
    const rowKey = JSON.stringify([d.table, rowId]);
    const key = JSON.stringify([d.table, rowId, d.column]);
    const row = [d.table, d.column, rowId, d.table === "users" ? cell("id") : cell("user_id"), valueText(d.value), d.reason];
    row.push(cell("received_at"), cell("loaded_at"));
    const count = perRow.get(rowKey) ?? 0;
    if (rows.has(key) || count < maxDiscardRowsPerRow) {
      if (!rows.has(key)) perRow.set(rowKey, count + 1);
      rows.set(key, row);
      continue;
    }
    let more = overflow.get(rowKey);
    if (!more) overflow.set(rowKey, (more = { row, values: new Map() }));
    more.values.set(d.column, d.value);
  }
  for (const [rowKey, { row, values }] of overflow) {
    row[1] = "*";
    row[4] = JSON.stringify(Object.fromEntries(values));
    row[5] = `${values.size} more values not stored in their columns (column → value); the first one's reason: ${row[5]}`;
    rows.set(`${rowKey}*`, row);
  }
  const columns = ["table_name", "column_name", "row_id", "user_id", "value", "reason", "received_at", "loaded_at"];
  const casts = columns.map((c, i) => `$${i + 1}::${c.endsWith("_at") ? "timestamptz" : "text"}[]`);
  const all = [...rows.values()];
  return {
    text: `INSERT INTO ${qualified(schema, discardsTable)} (${columns.join(", ")})
      SELECT * FROM unnest(${casts.join(", ")})
      ON CONFLICT (table_name, row_id, column_name) DO UPDATE
        SET value = EXCLUDED.value, reason = EXCLUDED.reason, user_id = EXCLUDED.user_id,
            received_at = EXCLUDED.received_at, loaded_at = EXCLUDED.loaded_at`,
    values: columns.map((_, i) => arrayLiteral(all.map((row) => row[i] ?? null))),
  };
}

/** A discarded value as text: a string as it is, anything else (or a string with NUL) as JSON. */
function valueText(value: unknown): string {
  if (typeof value === "string" && !value.includes("\u0000")) return value;
  return JSON.stringify(value);
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
