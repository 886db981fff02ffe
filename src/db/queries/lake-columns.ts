import type { Queryable } from "../pool.js";

/**
 * Registers the columns of a lake destination's table that have no type yet
 * (`proposed`: column → type) and reads back the type of each: one statement,
 * and a second for columns another process added while the first waited on
 * them. Two processes writing the same destination settle on the type
 * inserted first (src/lake/column-registry.ts).
 */
export async function settleLakeColumns(
  db: Queryable,
  destinationId: string,
  table: string,
  proposed: ReadonlyMap<string, string>,
): Promise<Map<string, string>> {
  const names = [...proposed.keys()];
  const result = await db.query<{ column_name: string; type: string }>(
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
    for (const [name, type] of await selectLakeColumns(db, destinationId, table, missing)) settled.set(name, type);
  }
  return settled;
}

/** The registered columns of a lake destination's table and their types (`only`: just these). */
export async function selectLakeColumns(
  db: Queryable,
  destinationId: string,
  table: string,
  only?: readonly string[],
): Promise<Map<string, string>> {
  const result = await db.query<{ column_name: string; type: string }>(
    `SELECT column_name, type FROM lake_columns
      WHERE destination_id = $1 AND table_name = $2 AND ($3::text[] IS NULL OR column_name = ANY($3::text[]))
      ORDER BY column_name`,
    [destinationId, table, only ?? null],
  );
  return new Map(result.rows.map((row) => [row.column_name, row.type]));
}
