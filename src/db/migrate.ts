import { fileURLToPath } from "node:url";
import { migrate } from "postgres-migrations";
import type pg from "pg";
import { describeDatabaseUrl, StartupError } from "../startup-error.js";

/** The numbered .sql files beside this module (copied into dist by the build). */
export const migrationsDirectory = fileURLToPath(new URL("./migrations", import.meta.url));

/**
 * Migrations whose comments were reworded after release (they pointed to a
 * document outside the repository; they now point to docs/api.md). The SQL
 * is byte for byte what was applied, but postgres-migrations hashes the
 * whole file and refuses to start when an applied file's hash changed, so a
 * database that applied the released wording has its recorded hash moved
 * to the new one. Only these exact old hashes move: any other edit of an
 * applied migration is still refused. This list is closed: a later
 * correction is a new migration (docs/job-table.md, "Changing the schema").
 */
export const rewordedMigrations: ReadonlyArray<{ name: string; releasedHash: string; hash: string }> = [
  { name: "audiences", releasedHash: "248b68d6785ea1e62b943ba1d57ebd2423d2ea79", hash: "f5978eb57b1be9f7f13d23316c98c540ecc3646a" },
  { name: "deletion_requests", releasedHash: "a22c6a2db70df97d11ba7b9ea6c7d02e200a2123", hash: "efd58c8456477fc793420c143f2b9abe0c646289" },
];

/** Moves the recorded hashes of reworded migrations (idempotent; a fresh database has no table yet). */
async function acceptRewordedMigrations(client: pg.PoolClient): Promise<void> {
  const table = await client.query<{ exists: boolean }>("SELECT to_regclass('migrations') IS NOT NULL AS exists");
  if (!table.rows[0]?.exists) return;
  for (const { name, releasedHash, hash } of rewordedMigrations) {
    await client.query("UPDATE migrations SET hash = $3 WHERE name = $1 AND hash = $2", [name, releasedHash, hash]);
  }
}

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
    await acceptRewordedMigrations(client);
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
