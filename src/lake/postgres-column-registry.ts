import type { Queryable } from "../db/pool.js";
import { selectLakeColumns, settleLakeColumns } from "../db/queries/lake-columns.js";
import type { ColumnRegistry } from "./column-registry.js";
import type { LakeType } from "./lake-types.js";

/**
 * A lake destination's column registry in Postgres (`lake_columns`): one
 * statement per table and flush registers the columns it brings that have
 * no type yet and reads back the type of each, so every file of a table,
 * whichever process wrote it, gives a column the same type.
 */
export function createPostgresColumnRegistry(db: Queryable, destinationId: string): ColumnRegistry {
  return {
    // The table's check constraint holds the types to the lake's: what comes back is a LakeType.
    settle: async (table, proposed) => (await settleLakeColumns(db, destinationId, table, proposed)) as Map<string, LakeType>,
    columns: async (table) => (await selectLakeColumns(db, destinationId, table)) as Map<string, LakeType>,
  };
}
