import { link, readFile, rename, stat, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "../logger.js";
import { StartupError } from "../startup-error.js";
import { bootId, canIdentifyProcesses, identifyProcess, pidInUse } from "./process-identity.js";

/** The data directory held by this process until release(). */
export interface DataDirLock {
  file: string;
  release(): Promise<void>;
}

interface Owner {
  pid: number;
  startTime: string;
  bootId: string;
}

export const lockFileName = "waypost.pid";

/**
 * Claims a data directory for this process, before its embedded Postgres is
 * touched. The lock is `waypost.pid`: pid, start time and boot id of the
 * owner, so a lock left by a process that died (`kill -9`, OOM) is told
 * apart from a live Waypost even once its pid belongs to someone else. A
 * live owner is refused by pid; a dead one's lock is taken over.
 *
 * The file appears complete or not at all (written aside, then hard-linked
 * into place, which fails if one is there), so a reader never sees a
 * half-written lock.
 */
export async function lockDataDirectory(options: { dataDir: string; logger: Logger }): Promise<DataDirLock> {
  const file = path.join(options.dataDir, lockFileName);
  const self = await ownIdentity();
  const content = `${self.pid}\n${self.startTime}\n${self.bootId}\n`;
  const draft = `${file}.${self.pid}.tmp`;
  await writeFile(draft, content, { mode: 0o644 });
  try {
    // A few rounds: each one either takes the lock or finds a new holder.
    for (let round = 0; round < 5; round++) {
      try {
        await link(draft, file);
        return { file, release: () => releaseLock(file, content) };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      const found = await readLock(file);
      if (found === undefined) continue;
      const owner = parseOwner(found.content);
      if (owner && (await ownerAlive(owner))) {
        throw new StartupError(
          `the data directory ${options.dataDir} is in use by another Waypost (pid ${owner.pid}): ` +
            "stop that process, or set WAYPOST_DATA_DIR to another directory",
        );
      }
      options.logger.warn({ file, owner: owner?.pid }, "the Waypost that held this data directory is gone: taking it over");
      await removeStale(file, found.ino);
    }
    throw new StartupError(`could not lock the data directory ${options.dataDir}: other processes keep claiming ${file}`);
  } finally {
    await unlink(draft).catch(() => {});
  }
}

/**
 * Removes a dead owner's lock, and only that one: it is first renamed
 * aside, which is atomic, and put back if what was moved is not the file
 * that was judged stale (another starter took over in between), so two
 * starters that both found the same stale lock cannot both end up holding it.
 */
async function removeStale(file: string, ino: number): Promise<void> {
  const aside = `${file}.${process.pid}.stale`;
  try {
    await rename(file, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  if ((await stat(aside)).ino === ino) {
    await unlink(aside).catch(() => {});
    return;
  }
  // A live lock was moved: back into place. Should a third starter have
  // claimed the name meanwhile, the moved file is left where it is rather
  // than deleted; the next round reads whoever holds the name.
  if (
    await link(aside, file).then(
      () => true,
      () => false,
    )
  )
    await unlink(aside).catch(() => {});
}

async function readLock(file: string): Promise<{ content: string; ino: number } | undefined> {
  try {
    const ino = (await stat(file)).ino;
    return { content: await readFile(file, "utf8"), ino };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

function parseOwner(content: string): Owner | undefined {
  const [pid, startTime = "", boot = ""] = content.split("\n");
  const parsed = Number(pid);
  return Number.isInteger(parsed) && parsed > 0 ? { pid: parsed, startTime, bootId: boot } : undefined;
}

async function ownIdentity(): Promise<Owner> {
  if (!canIdentifyProcesses()) return { pid: process.pid, startTime: "", bootId: "" };
  return { pid: process.pid, startTime: (await identifyProcess(process.pid))?.startTime ?? "", bootId: await bootId() };
}

/**
 * The owner still runs: same boot, a process with its pid and its start
 * time, not a zombie. Without /proc the pid answering is all there is to
 * go on, so a reused pid is taken for the owner: refusing is the safe side.
 */
async function ownerAlive(owner: Owner): Promise<boolean> {
  if (!canIdentifyProcesses()) return pidInUse(owner.pid);
  if (owner.bootId !== (await bootId())) return false;
  const running = await identifyProcess(owner.pid);
  return running !== undefined && !running.zombie && running.startTime === owner.startTime;
}

/** Removes the lock if it is still this process's own. */
async function releaseLock(file: string, content: string): Promise<void> {
  const current = await readFile(file, "utf8").catch(() => undefined);
  if (current === content) await unlink(file).catch(() => {});
}
