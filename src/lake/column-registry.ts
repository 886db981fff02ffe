import type { LakeType } from "./lake-types.js";

/**
 * The type of every column of a lake's tables, kept so that a column has one
 * type across all of its files: the first type seen for a column wins, and a
 * later value of another type is written as null (and counted).
 *
 * Shaped for a table `lake_columns(destination_id, table_name, column_name,
 * type)` with the key (destination_id, table_name, column_name): `settle` is
 * one `INSERT … ON CONFLICT DO NOTHING` of the proposed columns and one
 * `SELECT` of the table's, so two writers proposing different types for a
 * new column at once both end up with the one that was inserted first.
 */
export interface ColumnRegistry {
  /**
   * The types of these columns of `table`: the registered type where the
   * column has one, else the proposed type, which is registered.
   */
  settle(table: string, proposed: ReadonlyMap<string, LakeType>): Promise<Map<string, LakeType>>;
  /** Every registered column of `table` with its type (for readers, and a schema to show). */
  columns(table: string): Promise<Map<string, LakeType>>;
}

/** A registry held in memory: for tests, and until the Postgres-backed one exists. */
export function createMemoryColumnRegistry(): ColumnRegistry {
  const tables = new Map<string, Map<string, LakeType>>();
  return {
    async settle(table, proposed) {
      let known = tables.get(table);
      if (!known) tables.set(table, (known = new Map()));
      const settled = new Map<string, LakeType>();
      for (const [column, type] of proposed) {
        let registered = known.get(column);
        if (registered === undefined) known.set(column, (registered = type));
        settled.set(column, registered);
      }
      return settled;
    },
    async columns(table) {
      return new Map(tables.get(table));
    },
  };
}
