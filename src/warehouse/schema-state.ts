import type pg from "pg";
import { type ColumnType, columnTypeOf } from "./column-types.js";
import { qualified, quoteIdent } from "./identifiers.js";
import { discardsTable, fixedColumns, layoutTables } from "./layout.js";
import { discardsTableSql, quoteLiteral, tableMarker } from "./ownership.js";
import { errorText, isRetryableError as isConnectionError } from "./retryable.js";

/** The columns a batch needs in one table: name → the type a new column gets (from the batch's first value). */
export type NeededColumns = Map<string, ColumnType>;

/** What a warehouse schema holds, as far as this process knows; kept in step with the DDL it runs. */
export interface SchemaState {
  /** The type of a column, or undefined when it does not exist (yet). */
  typeOf(table: string, column: string): ColumnType | undefined;
  /** Why a column is not in its table (past the cap, or refused by Postgres), or undefined when nothing is known. */
  refusal(table: string, column: string): string | undefined;
  /**
   * Creates missing tables and adds missing columns (one ALTER TABLE per
   * table; where that fails, column by column), up to the column cap. A
   * column past the cap is never attempted, and one Postgres refused is
   * remembered (with Postgres's reason) and not attempted again.
   */
  ensure(needed: ReadonlyMap<string, NeededColumns>): Promise<void>;
  /** Forgets what it knows (a table or schema was dropped behind its back): the next ensure reads the catalog again. */
  reset(): void;
  /** The schema's tables that have a user column (for deletes), read from the catalog. */
  userTables(client: pg.ClientBase): Promise<Array<{ table: string; column: string }>>;
}

/**
 * The schema, a table or a column this process knows of is gone (someone
 * dropped it in the warehouse): what it knows must be read again.
 */
export function isStaleSchemaError(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === "42P01" || code === "42703" || code === "3F000";
}

/** Codes of a race with another loader making the same table or column. */
const lostRace = new Set(["23505", "42P07", "42701", "42P06"]);

/** Refused columns remembered at most (a flood of refused names starts the memory over rather than grow it). */
const maxRemembered = 10_000;

export interface SchemaStateOptions {
  pool: pg.Pool;
  schema: string;
  /** Columns per table at most (the fixed columns always fit). */
  maxColumns: number;
}

export function createSchemaState(options: SchemaStateOptions): SchemaState {
  const { pool, schema, maxColumns } = options;
  const tables = new Map<string, Map<string, ColumnType>>();
  const refused = new Map<string, Map<string, string>>();
  let remembered = 0;
  let schemaReady = false;
  const capReason = `the table has reached ${maxColumns} columns (WAYPOST_WAREHOUSE_MAX_COLUMNS)`;

  async function read(names: readonly string[]) {
    const result = await pool.query<{ table: string; column: string; type: string; marked: boolean }>(
      `SELECT c.relname AS table, a.attname AS column, format_type(a.atttypid, a.atttypmod) AS type,
              coalesce(obj_description(c.oid, 'pg_class') = $3, false) AS marked
         FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relname = ANY ($2::text[]) AND a.attnum > 0 AND NOT a.attisdropped`,
      [schema, names, tableMarker],
    );
    for (const name of names) tables.delete(name);
    const unmarked = new Set<string>();
    for (const row of result.rows) {
      let columns = tables.get(row.table);
      if (!columns) tables.set(row.table, (columns = new Map()));
      columns.set(row.column, columnTypeOf(row.type));
      if (!row.marked) unmarked.add(row.table);
    }
    // Tables made before tables were marked: Waypost loads them, so they are its own.
    for (const table of unmarked) await mark(table);
  }

  async function ddl(sql: string): Promise<void> {
    try {
      await pool.query(sql);
    } catch (error) {
      if (!lostRace.has((error as { code?: string }).code ?? "")) throw error;
    }
  }

  /**
   * Marks a table as Waypost's (see tableMarker). A mark that cannot be
   * written (the role does not own the table) does not stop loading: the
   * table is only refused the next time the destination's settings are saved.
   */
  const mark = (table: string) =>
    pool.query(`COMMENT ON TABLE ${qualified(schema, table)} IS ${quoteLiteral(tableMarker)}`).then(
      () => {},
      () => {},
    );

  const columnSql = (name: string, type: ColumnType) => `${quoteIdent(name)} ${type}`;

  async function create(table: string, needed: NeededColumns) {
    const isEventTable = !(layoutTables as readonly string[]).includes(table);
    const columns = new Map([...needed, ...fixedColumns(table, isEventTable)]);
    const list = [...columns].map(([name, type]) => (name === "id" ? `${quoteIdent("id")} text PRIMARY KEY` : columnSql(name, type)));
    await ddl(`CREATE TABLE IF NOT EXISTS ${qualified(schema, table)} (${list.join(", ")})`);
    await mark(table);
  }

  function remember(table: string, column: string, reason: string) {
    if (remembered >= maxRemembered) {
      refused.clear();
      remembered = 0;
    }
    let columns = refused.get(table);
    if (!columns) refused.set(table, (columns = new Map()));
    columns.set(column, reason);
    remembered++;
  }

  /** The columns to add to a table now: its missing fixed columns, then new ones while there is room under the cap. */
  function toAdd(table: string, known: ReadonlyMap<string, ColumnType> | undefined, columns: NeededColumns): NeededColumns {
    const fixed = fixedColumns(table, !(layoutTables as readonly string[]).includes(table));
    const add: NeededColumns = new Map();
    for (const [name, type] of fixed) if (known && !known.has(name)) add.set(name, type);
    let room = maxColumns - (known?.size ?? fixed.size) - add.size;
    for (const [name, type] of columns) {
      if (known?.has(name) || fixed.has(name) || add.has(name) || refused.get(table)?.has(name)) continue;
      if (room <= 0) continue;
      add.set(name, type);
      room--;
    }
    return add;
  }

  async function addColumns(table: string, missing: NeededColumns) {
    try {
      await ddl(
        `ALTER TABLE ${qualified(schema, table)} ${[...missing].map(([n, t]) => `ADD COLUMN IF NOT EXISTS ${columnSql(n, t)}`).join(", ")}`,
      );
    } catch (error) {
      if (isConnectionError(error) || isStaleSchemaError(error)) throw error;
      // One column the database refuses must not keep the others out.
      for (const [name, type] of missing) {
        try {
          await ddl(`ALTER TABLE ${qualified(schema, table)} ADD COLUMN IF NOT EXISTS ${columnSql(name, type)}`);
        } catch (columnError) {
          if (isConnectionError(columnError) || isStaleSchemaError(columnError)) throw columnError;
          remember(table, name, `Postgres refused the column: ${errorText(columnError)}`);
        }
      }
    }
  }

  return {
    typeOf: (table, column) => tables.get(table)?.get(column),
    refusal(table, column) {
      const reason = refused.get(table)?.get(column);
      if (reason !== undefined) return reason;
      const known = tables.get(table);
      return known && !known.has(column) && known.size >= maxColumns ? capReason : undefined;
    },
    reset() {
      tables.clear();
      schemaReady = false;
    },
    async ensure(needed) {
      if (!schemaReady) {
        await ddl(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
        await ddl(discardsTableSql(schema));
        await mark(discardsTable);
        schemaReady = true;
      }
      const unknown = [...needed.keys()].filter((t) => !tables.has(t));
      if (unknown.length > 0) await read(unknown);
      const touched: string[] = [];
      for (const [table, columns] of needed) {
        const known = tables.get(table);
        const missing = toAdd(table, known, columns);
        if (known && missing.size === 0) continue;
        touched.push(table);
        if (!known) {
          try {
            await create(table, missing);
            continue;
          } catch (error) {
            if (isConnectionError(error) || isStaleSchemaError(error)) throw error;
            // The table with its fixed columns alone, then the rest one by one.
            await create(table, new Map());
          }
        }
        await addColumns(table, missing);
      }
      // The catalog is the truth: another loader may have added a column with another type first.
      if (touched.length > 0) await read(touched);
    },
    async userTables(client) {
      const result = await client.query<{ table: string; column: string }>(
        `SELECT c.relname AS table, a.attname AS column
           FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
            AND ((c.relname = 'users' AND a.attname = 'id') OR (c.relname <> 'users' AND a.attname = 'user_id'))`,
        [schema],
      );
      return result.rows;
    },
  };
}
