// @ts-check
import { readdirSync, readFileSync } from "node:fs";
import pg from "pg";

// /proc/<pid>/stat counts CPU time in clock ticks; Linux reports 100 per second to user space.
const ticksPerSecond = 100;

/**
 * The fields of /proc/<pid>/stat after the command name (which is in parentheses and may hold spaces).
 * @param {number} pid
 * @returns {string[] | undefined}
 */
function statFields(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/**
 * CPU seconds a whole Postgres server has used: its postmaster, every process it has now (backends, the WAL
 * writer, the checkpointer, Citus's maintenance daemon) and every child it has reaped (a backend that ended
 * in the window still counts: the kernel adds a reaped child's time to its parent's cutime and cstime).
 * @param {number} postmaster
 */
export function serverCpuSeconds(postmaster) {
  const own = statFields(postmaster);
  if (!own) return undefined;
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(Number(entry));
    if (fields && Number(fields[1]) === postmaster) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / ticksPerSecond;
}

/**
 * The postmaster's pid of the Postgres server at `url` (it must run on this machine, as the bench's do):
 * the first line of postmaster.pid in its data directory.
 * @param {string} url
 */
export async function postmasterPid(url) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const dir = (await client.query("SHOW data_directory")).rows[0].data_directory;
    return Number(readFileSync(`${dir}/postmaster.pid`, "utf8").split("\n")[0]);
  } finally {
    await client.end();
  }
}

/**
 * Measures the CPU of several Postgres servers (by their postmasters) and processes over a window.
 * @param {Record<string, { postmaster?: number, pid?: number }>} measured
 */
export function startNodeCpuMeter(measured) {
  const startedAt = performance.now();
  const read = (/** @type {{ postmaster?: number, pid?: number }} */ m) =>
    m.postmaster !== undefined ? serverCpuSeconds(m.postmaster) : m.pid !== undefined ? processCpuSeconds(m.pid) : undefined;
  const before = Object.fromEntries(Object.entries(measured).map(([name, m]) => [name, read(m)]));
  return {
    /** CPU seconds per name over the window, and the window in seconds. */
    stop() {
      const seconds = (performance.now() - startedAt) / 1000;
      /** @type {Record<string, number | null>} */
      const used = {};
      for (const [name, m] of Object.entries(measured)) {
        const now = read(m);
        const then = before[name];
        used[name] = now === undefined || then === undefined ? null : now - then;
      }
      return { seconds, used };
    },
  };
}

/** @param {number} pid */
function processCpuSeconds(pid) {
  const fields = statFields(pid);
  return fields ? (Number(fields[11]) + Number(fields[12])) / ticksPerSecond : undefined;
}
