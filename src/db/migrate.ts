import { fileURLToPath } from "node:url";
import { migrate } from "postgres-migrations";
import type pg from "pg";
import { describeDatabaseUrl, StartupError } from "../startup-error.js";

/** The numbered .sql files beside this module (copied into dist by the build). */
export const migrationsDirectory = fileURLToPath(new URL("./migrations", import.meta.url));

/**
 * Applies pending migrations. postgres-migrations holds an advisory lock while
 * it runs, so processes starting at once apply each migration exactly once,
 * and it refuses to run when an applied file was edited. It is the first use
 * of the database at start-up, so its failures are explained here: the
 * database cannot be reached, or a migration failed.
 */
export async function runMigrations(pool: pg.Pool): Promise<void> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    const where = describeDatabaseUrl(pool.options.connectionString ?? "");
    throw new StartupError(
      `cannot connect to the database at ${where}: ${error instanceof Error ? error.message : String(error)}. ` +
        "Check that Postgres is running there and that DATABASE_URL (user, password, database) is right",
      { cause: error },
    );
  }
  try {
    await migrate({ client }, migrationsDirectory);
  } catch (error) {
    throw new StartupError(
      `applying the database migrations failed: ${error instanceof Error ? error.message : String(error)}. ` +
        "The database was left as it was; check that this user may create tables, and that no applied migration file was edited",
      { cause: error },
    );
  } finally {
    client.release();
  }
}
