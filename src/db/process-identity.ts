import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";

/**
 * A process as Linux's /proc shows it. A pid alone does not name a process:
 * after a crash (or in a container started afresh) the pid of a dead
 * Waypost or Postgres is soon someone else's. Its start time (clock ticks
 * since boot) together with the boot id does.
 */
export interface ProcessIdentity {
  pid: number;
  /** Field 22 of /proc/PID/stat. */
  startTime: string;
  /** A zombie has exited and holds nothing; it only waits to be reaped. */
  zombie: boolean;
  /** Its argv (empty for a zombie). */
  command: string[];
  parentPid: number;
}

/** Whether processes can be told apart here (Linux); elsewhere only `kill(pid, 0)` is available. */
export function canIdentifyProcesses(): boolean {
  return existsSync("/proc/self/stat");
}

/** The process with this pid, or undefined when there is none. */
export async function identifyProcess(pid: number): Promise<ProcessIdentity | undefined> {
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    // The command name in parentheses may itself hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const command = (await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")).split("\0").filter(Boolean);
    return { pid, startTime: fields[19] ?? "", zombie: fields[0] === "Z", command, parentPid: Number(fields[1]) };
  } catch {
    return undefined;
  }
}

/** Changes on every boot; a start time is only comparable within one. */
export async function bootId(): Promise<string> {
  return (await readFile("/proc/sys/kernel/random/boot_id", "utf8").catch(() => "")).trim();
}

/** Without /proc: whether something answers to the pid (which may be a later process). */
export function pidInUse(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
