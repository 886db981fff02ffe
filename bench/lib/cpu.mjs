// @ts-check
import { readFileSync } from "node:fs";
import { startStatementWindow } from "./statements.mjs";

// /proc/<pid>/stat counts CPU time in clock ticks; Linux reports 100 per second to user space.
const ticksPerSecond = 100;

/**
 * CPU seconds (user + system) a process has used so far, or undefined when /proc cannot tell (not Linux, not ours).
 * @param {number | undefined} pid
 * @returns {number | undefined}
 */
export function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
  } catch {
    return undefined;
  }
}

/**
 * The Postgres backends serving this database (the service's pools, the bench's own connection).
 * @param {import("pg").Pool} pool
 * @returns {Promise<number[]>}
 */
async function backendPids(pool) {
  const { rows } = await pool.query("SELECT pid FROM pg_stat_activity WHERE datname = current_database()");
  return rows.map((/** @type {{ pid: number }} */ r) => r.pid);
}

/**
 * Transactions committed or rolled back in this database so far (Postgres publishes these counts within about a second).
 * @param {import("pg").Pool} pool
 */
export async function transactionCount(pool) {
  const { rows } = await pool.query(
    "SELECT (xact_commit + xact_rollback)::bigint AS n FROM pg_stat_database WHERE datname = current_database()",
  );
  return Number(rows[0].n);
}

/**
 * Measures the CPU time of named processes and of this database's Postgres
 * backends over a window. Backends are read through /proc, so Postgres must
 * run on this machine (it does for the bench: DATABASE_URL on loopback, or
 * the embedded one); otherwise `postgres` is null. Background work shared by
 * every database (WAL writer, checkpointer) is not counted.
 * @template {string} Name
 * @param {import("pg").Pool} pool
 * @param {Record<Name, number | undefined>} processes the pids to measure, by the name to report them under
 */
export async function startCpuMeter(pool, processes) {
  await checkpoint(pool);
  const startedAt = performance.now();
  const self = process.cpuUsage();
  const before = new Map(Object.entries(processes).map(([name, pid]) => [name, cpuSeconds(pid)]));
  const backendsBefore = new Map((await backendPids(pool)).map((pid) => [pid, cpuSeconds(pid)]));
  const transactionsBefore = await transactionCount(pool);
  const statementWindow = await startStatementWindow(pool);
  return {
    /**
     * CPU seconds per process over the window, the window's length in seconds, the database's transactions in it,
     * and its costliest statements (when the server has pg_stat_statements loaded; otherwise undefined).
     * @returns {Promise<{ seconds: number, used: Record<Name | "postgres" | "load_generator", number | null>, transactions: number,
     *                     statements: import("./statements.mjs").StatementFigure[] | undefined }>}
     */
    async stop() {
      const seconds = (performance.now() - startedAt) / 1000;
      const used = /** @type {Record<Name | "postgres" | "load_generator", number | null>} */ ({});
      for (const [name, pid] of /** @type {Array<[Name, number | undefined]>} */ (Object.entries(processes))) {
        const now = cpuSeconds(pid);
        const then = before.get(name);
        used[name] = now === undefined || then === undefined ? null : now - then;
      }
      let postgres = 0;
      let visible = false;
      for (const pid of await backendPids(pool)) {
        const now = cpuSeconds(pid);
        if (now === undefined) continue;
        visible = true;
        postgres += now - (backendsBefore.get(pid) ?? 0);
      }
      used.postgres = visible ? postgres : null;
      const mine = process.cpuUsage(self);
      used.load_generator = (mine.user + mine.system) / 1e6;
      // Let the backends publish their transaction counts (at most once a second each).
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const transactions = (await transactionCount(pool)) - transactionsBefore;
      const statements = await statementWindow?.stop();
      return { seconds, used, transactions, statements };
    },
  };
}

/**
 * CPU seconds → percent of one core over the window.
 * @param {Record<string, number | null>} used
 * @param {number} seconds
 */
export function percentOfCore(used, seconds) {
  return Object.fromEntries(Object.entries(used).map(([name, s]) => [name, s === null ? null : Math.round((s / seconds) * 100)]));
}

/**
 * Writes a checkpoint before a measured window, so every window (Waypost's
 * and its baseline's) starts from the same point of the checkpoint cycle: a
 * checkpoint that falls inside one window (after the bulk load of 200,000
 * queued deliveries, say) and not the other would put its writes, and the
 * full-page images that follow it, on one side only.
 * Needs a superuser or pg_checkpoint; skipped (not failed) without one.
 * @param {import("pg").Pool} pool
 */
export async function checkpoint(pool) {
  try {
    await pool.query("CHECKPOINT");
  } catch {
    // Not allowed here: the window just starts wherever the cycle is.
  }
}
