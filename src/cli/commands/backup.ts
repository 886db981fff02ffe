import { existsSync } from "node:fs";
import type { Command } from "commander";
import { RestoreRefused, restoreBackup } from "../../db/backup/restore-backup.js";
import { writeBackup } from "../../db/backup/write-backup.js";
import { StartupError } from "../../startup-error.js";
import type { CliIo } from "../context.js";
import { openDatabaseTarget, type DatabaseTarget } from "../database-target.js";
import { CommandFailure, UsageError } from "../errors.js";

const databaseFlag = "--database-url <url>";
const databaseHelp = "the database (default: DATABASE_URL, else the embedded Postgres of WAYPOST_DATA_DIR, ./.waypost)";

/** Runs `work` on the service's database; the database's own failures are the command's. */
async function withDatabase<T>(io: CliIo, url: string | undefined, work: (target: DatabaseTarget) => Promise<T>): Promise<T> {
  let target: DatabaseTarget;
  try {
    target = await openDatabaseTarget(url, io.env);
  } catch (error) {
    if (error instanceof StartupError) throw new CommandFailure(error.message);
    throw error;
  }
  try {
    return await work(target);
  } catch (error) {
    if (error instanceof RestoreRefused || error instanceof CommandFailure) throw error;
    throw new CommandFailure(`${error instanceof Error ? error.message : String(error)} (database: ${target.where})`);
  } finally {
    await target.close();
  }
}

const plural = (n: number, one: string) => `${n} ${n === 1 ? one : `${one}s`}`;

/**
 * `backup FILE` and `restore FILE`: the service's whole database, read and
 * written directly (not through the server), by Waypost itself: no pg_dump
 * of the server's major version is needed.
 */
export function registerBackup(program: Command, io: CliIo): void {
  program
    .command("backup")
    .description("write a consistent backup of the service's database to FILE, while it runs")
    .argument("<file>", "the backup file to write (gzip'd; refused if it exists)")
    .option(databaseFlag, databaseHelp)
    .action(async (file: string, flags: { databaseUrl?: string }) => {
      if (existsSync(file)) throw new UsageError(`${file} exists: give a new file name (a backup never overwrites one)`);
      const summary = await withDatabase(io, flags.databaseUrl, (target) => writeBackup(target.client, file));
      const rows = Object.values(summary.rows).reduce((a, b) => a + b, 0);
      io.stdout.write(
        `backed up ${plural(rows, "row")} of ${plural(Object.keys(summary.rows).length, "table")} to ${file} (${summary.bytes} bytes)\n`,
      );
    });
  program
    .command("restore")
    .description("restore a backup into an empty database (the service stopped); --force replaces what it holds")
    .argument("<file>", "a file written by waypost backup")
    .option(databaseFlag, databaseHelp)
    .option("--force", "replace every row the database holds with the backup's")
    .action(async (file: string, flags: { databaseUrl?: string; force?: boolean }) => {
      if (!existsSync(file)) throw new UsageError(`${file}: no such file`);
      const summary = await withDatabase(io, flags.databaseUrl, async (target) => {
        try {
          return await restoreBackup(target.client, file, { force: flags.force === true });
        } catch (error) {
          if (error instanceof RestoreRefused) throw new CommandFailure(`${error.message} (database: ${target.where})`);
          throw error;
        }
      });
      const rows = Object.values(summary.rows).reduce((a, b) => a + b, 0);
      const replaced = Object.values(summary.replaced).reduce((a, b) => a + b, 0);
      io.stdout.write(
        `restored ${plural(rows, "row")} of ${plural(Object.keys(summary.rows).length, "table")} from ${file}` +
          `${replaced > 0 ? ` (replacing ${plural(replaced, "row")})` : ""}\n`,
      );
    });
}
