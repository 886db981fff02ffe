import type { Queryable } from "../pool.js";

/**
 * Where the job table lives: one Postgres (`postgres`), or distributed by
 * destination on Citus (`citus`). Read from the database at start, never
 * guessed: a database is on Citus when `delivery_queue` is a distributed
 * table there, and everything that differs between the two follows from it.
 */
export type JobTableLayout = "postgres" | "citus";

/** The layout of the database behind `db`, as its catalogs say. */
export async function detectJobTableLayout(db: Queryable): Promise<JobTableLayout> {
  if (!(await hasCitusExtension(db))) return "postgres";
  const result = await db.query<{ distributed: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_dist_partition
                     WHERE logicalrelid = to_regclass('delivery_queue') AND partmethod = 'h') AS distributed`,
  );
  return result.rows[0]?.distributed ? "citus" : "postgres";
}

/** Whether the Citus extension is installed in this database. */
export async function hasCitusExtension(db: Queryable): Promise<boolean> {
  const result = await db.query<{ installed: boolean }>(
    "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS installed",
  );
  return result.rows[0]?.installed === true;
}
