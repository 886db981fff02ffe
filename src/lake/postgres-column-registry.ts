import type { ColumnRegistry } from "./column-registry.js";
import type { LakeType } from "./lake-types.js";
import type { Queryable } from "../db/pool.js";

/**
 * A lake destination's column registry in Postgres (`lake_columns`): one
 * statement per table and flush registers the columns it brings that have
 * no type yet and reads back the type of each, so two processes writing
 * the same destination settle on the type inserted first.
 */
export function createPostgresColumnRegistry(db: Queryable, destinationId: string): ColumnRegistry {
  return {
    async settle(table, proposed) {
      const names = [...proposed.keys()];
      const result = await db.query<{ column_name: string; type: LakeType }>(
        `WITH added AS (
           INSERT INTO lake_columns (destination_id, table_name, column_name, type)
           SELECT $1, $2, c.name, c.type FROM unnest($3::text[], $4::text[]) AS c(name, type)
           ON CONFLICT DO NOTHING
           RETURNING column_name, type
         )
         SELECT column_name, type FROM added
         UNION ALL
         SELECT column_name, type FROM lake_columns
          WHERE destination_id = $1 AND table_name = $2 AND column_name = ANY($3::text[])`,
        [destinationId, table, names, names.map((name) => proposed.get(name)!)],
      );
      // The SELECT reads the statement's snapshot: a column added here is only in `added`, and one another process
      // added while this statement waited on it is in neither. Those are read again, in a snapshot that has them.
      const settled = new Map(result.rows.map((row) => [row.column_name, row.type]));
      const missing = names.filter((name) => !settled.has(name));
      if (missing.length > 0) {
        const again = await db.query<{ column_name: string; type: LakeType }>(
          "SELECT column_name, type FROM lake_columns WHERE destination_id = $1 AND table_name = $2 AND column_name = ANY($3::text[])",
          [destinationId, table, missing],
        );
        for (const row of again.rows) settled.set(row.column_name, row.type);
      }
      return settled;
    },
    async columns(table) {
      const result = await db.query<{ column_name: string; type: LakeType }>(
        "SELECT column_name, type FROM lake_columns WHERE destination_id = $1 AND table_name = $2 ORDER BY column_name",
        [destinationId, table],
      );
      return new Map(result.rows.map((row) => [row.column_name, row.type]));
    },
  };
}
