import { readFile, unlink } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "../logger.js";
import { StartupError } from "../startup-error.js";
import { canIdentifyProcesses, identifyProcess, type ProcessIdentity } from "./process-identity.js";

export interface OrphanedPostgresOptions {
  clusterDir: string;
  logger: Logger;
  /** How long a left-over postmaster gets to shut down. */
  timeoutMs?: number;
}

/**
 * Run with the data directory locked, before its Postgres starts. A Waypost
 * that died hard (`kill -9`, OOM) leaves its embedded Postgres running: it
 * is not the dead process's to stop any more, so it is stopped here, the
 * way Postgres means to be stopped (SIGINT: fast shutdown, every
 * transaction rolled back, a checkpoint written). A postmaster.pid whose
 * pid is now a zombie or another program (a pid reused after a crash or in
 * a fresh container) would make Postgres refuse to start; it is removed
 * once no process is attached to the old server's shared memory. A pid that
 * is simply gone is left to Postgres, which handles that itself.
 */
export async function clearOrphanedPostgres(options: OrphanedPostgresOptions): Promise<void> {
  // Without /proc nothing can be told about the pid: Postgres decides, and
  // says "already running" if it is.
  if (!canIdentifyProcesses()) return;
  const lockFile = path.join(options.clusterDir, "postmaster.pid");
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  let stopping: number | undefined;
  for (;;) {
    const lock = await readPostmasterLock(lockFile);
    if (!lock) return;
    const running = await identifyProcess(lock.pid);
    if (!running) return;
    if (!running.zombie && isPostmasterOf(running, options.clusterDir)) {
      if (stopping !== lock.pid) {
        const parent = await identifyProcess(running.parentPid);
        if (parent && parent.pid !== 1 && !parent.zombie && isNode(parent)) {
          throw new StartupError(
            `the embedded Postgres in ${options.clusterDir} (pid ${lock.pid}) is run by process ${parent.pid}, which is still alive ` +
              "(a Waypost of a version that does not lock its data directory?): stop it, or set WAYPOST_DATA_DIR to another directory",
          );
        }
        options.logger.warn(
          { pid: lock.pid, dir: options.clusterDir },
          "stopping the embedded Postgres left running by a Waypost that is gone",
        );
        process.kill(lock.pid, "SIGINT");
        stopping = lock.pid;
      }
    } else if (!(await sharedMemoryInUse(lock.sharedMemoryId))) {
      options.logger.warn(
        { pid: lock.pid, dir: options.clusterDir },
        "removing a stale postmaster.pid: its pid is no longer a Postgres of this cluster",
      );
      await unlink(lockFile).catch(() => {});
      return;
    }
    if (Date.now() > deadline) {
      throw new StartupError(
        `the embedded Postgres in ${options.clusterDir} (pid ${lock.pid}) was left running by a Waypost that is gone, ` +
          "and did not stop in time: stop it, or set WAYPOST_DATA_DIR to another directory",
      );
    }
    // The postmaster is not this process's child: no exit event to await.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

interface PostmasterLock {
  pid: number;
  /** The SysV segment Postgres keeps only to tell whether old backends live on. */
  sharedMemoryId: number | undefined;
}

/** postmaster.pid: pid, data directory, start time, port, socket dir, listen address, "shm key  shm id", status. */
async function readPostmasterLock(file: string): Promise<PostmasterLock | undefined> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const lines = text.split("\n");
  // A negative pid is a single-user backend's.
  const pid = Math.abs(Number(lines[0]));
  if (!Number.isInteger(pid) || pid === 0) return undefined;
  const shmId = Number(lines[6]?.trim().split(/\s+/)[1]);
  return { pid, sharedMemoryId: Number.isInteger(shmId) ? shmId : undefined };
}

function isPostmasterOf(process: ProcessIdentity, clusterDir: string): boolean {
  const [binary, ...args] = process.command;
  if (!binary || path.basename(binary) !== "postgres") return false;
  const dir = args[args.indexOf("-D") + 1];
  return args.includes("-D") && dir !== undefined && path.resolve(dir) === path.resolve(clusterDir);
}

/** A live node parent: the postmaster is still someone's child, not an orphan adopted by init. */
function isNode(process: ProcessIdentity): boolean {
  return /^node/.test(path.basename(process.command[0] ?? ""));
}

/** Whether processes (old backends) are still attached to the segment, as Postgres itself checks. */
async function sharedMemoryInUse(shmId: number | undefined): Promise<boolean> {
  if (shmId === undefined) return false;
  const table = await readFile("/proc/sysvipc/shm", "utf8").catch(() => "");
  for (const line of table.split("\n").slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (Number(fields[1]) === shmId) return Number(fields[6]) > 0;
  }
  return false;
}
