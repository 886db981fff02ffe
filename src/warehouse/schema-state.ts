import type pg from "pg";
import { type ColumnType, columnTypeOf } from "./column-types.js";
import { qualified, quoteIdent } from "./identifiers.js";
import { fixedColumns, layoutTables } from "./layout.js";
import { isRetryableError as isConnectionError } from "./retryable.js";

/** The columns a batch needs in one table: name → the type a new column gets (from the batch's first value). */
export type NeededColumns = Map<string, ColumnType>;

/** What a warehouse schema holds, as far as this process knows; kept in step with the DDL it runs. */
export interface SchemaState {
  /** The type of a column, or undefined when it does not exist (yet). */
  typeOf(table: string, column: string): ColumnType | undefined;
  /**
   * Creates missing tables and adds missing columns (one ALTER TABLE per
   * table); where that fails, column by column. Returns the columns that
   * could not be added (a column limit, a refused name), per table.
   */
  ensure(needed: ReadonlyMap<string, NeededColumns>): Promise<Map<string, Set<string>>>;
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

export function createSchemaState(options: { pool: pg.Pool; schema: string }): SchemaState {
  const { pool, schema } = options;
  const tables = new Map<string, Map<string, ColumnType>>();
  let schemaReady = false;

  async function read(names: readonly string[]) {
    const result = await pool.query<{ table: string; column: string; type: string }>(
      `SELECT c.relname AS table, a.attname AS column, format_type(a.atttypid, a.atttypmod) AS type
         FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relname = ANY ($2::text[]) AND a.attnum > 0 AND NOT a.attisdropped`,
      [schema, names],
    );
    for (const name of names) tables.delete(name);
    for (const row of result.rows) {
      let columns = tables.get(row.table);
      if (!columns) tables.set(row.table, (columns = new Map()));
      columns.set(row.column, columnTypeOf(row.type));
    }
  }

  async function ddl(sql: string): Promise<void> {
    try {
      await pool.query(sql);
    } catch (error) {
      if (!lostRace.has((error as { code?: string }).code ?? "")) throw error;
    }
  }

  const columnSql = (name: string, type: ColumnType) => `${quoteIdent(name)} ${type}`;

  function createSql(table: string, needed: NeededColumns): string {
    const isEventTable = !(layoutTables as readonly string[]).includes(table);
    const columns = new Map([...needed, ...fixedColumns(table, isEventTable)]);
    const list = [...columns].map(([name, type]) => (name === "id" ? `${quoteIdent("id")} text PRIMARY KEY` : columnSql(name, type)));
    return `CREATE TABLE IF NOT EXISTS ${qualified(schema, table)} (${list.join(", ")})`;
  }

  return {
    typeOf: (table, column) => tables.get(table)?.get(column),
    reset() {
      tables.clear();
      schemaReady = false;
    },
    async ensure(needed) {
      const failed = new Map<string, Set<string>>();
      if (!schemaReady) {
        await ddl(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
        schemaReady = true;
      }
      const unknown = [...needed.keys()].filter((t) => !tables.has(t));
      if (unknown.length > 0) await read(unknown);
      const touched: string[] = [];
      for (const [table, columns] of needed) {
        const known = tables.get(table);
        const missing = new Map([...columns].filter(([name]) => !known?.has(name)));
        if (known && missing.size === 0) continue;
        touched.push(table);
        try {
          if (!known) await ddl(createSql(table, missing));
          else
            await ddl(
              `ALTER TABLE ${qualified(schema, table)} ${[...missing].map(([n, t]) => `ADD COLUMN IF NOT EXISTS ${columnSql(n, t)}`).join(", ")}`,
            );
        } catch (error) {
          if (isConnectionError(error) || isStaleSchemaError(error)) throw error;
          // The table with its fixed columns alone, then the rest one by one.
          if (!known) await ddl(createSql(table, new Map()));
          // One column the database refuses must not keep the others out.
          for (const [name, type] of missing) {
            try {
              await ddl(`ALTER TABLE ${qualified(schema, table)} ADD COLUMN IF NOT EXISTS ${columnSql(name, type)}`);
            } catch (columnError) {
              if (isConnectionError(columnError) || isStaleSchemaError(columnError)) throw columnError;
              let set = failed.get(table);
              if (!set) failed.set(table, (set = new Set()));
              set.add(name);
            }
          }
        }
      }
      // The catalog is the truth: another loader may have added a column with another type first.
      if (touched.length > 0) await read(touched);
      return failed;
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
