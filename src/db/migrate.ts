import { fileURLToPath } from "node:url";
import { migrate } from "postgres-migrations";
import type pg from "pg";

/** The numbered .sql files beside this module (copied into dist by the build). */
export const migrationsDirectory = fileURLToPath(new URL("./migrations", import.meta.url));

/**
 * Applies pending migrations. postgres-migrations holds an advisory lock while
 * it runs, so processes starting at once apply each migration exactly once,
 * and it refuses to run when an applied file was edited.
 */
export async function runMigrations(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await migrate({ client }, migrationsDirectory);
  } finally {
    client.release();
  }
}
