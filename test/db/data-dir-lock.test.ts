import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { lockDataDirectory, lockFileName } from "../../src/db/data-dir-lock.js";
import { createLogger } from "../../src/logger.js";
import { eventually } from "../helpers/process.js";

// The data directory lock against real processes: live, killed with
// SIGKILL, and a live one whose pid is the one a dead owner had.

const logger = createLogger("silent");
const children: ChildProcess[] = [];

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

const bootId = () => readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
const startTimeOf = (pid: number) =>
  readFileSync(`/proc/${pid}/stat`, "utf8")
    .replace(/^.*\) /, "")
    .split(" ")[19]!;

async function startSleeper(): Promise<ChildProcess> {
  const child = spawn("sleep", ["600"], { stdio: "ignore" });
  children.push(child);
  await eventually(async () => existsSync(`/proc/${child.pid}/stat`));
  return child;
}

describe.skipIf(!existsSync("/proc/self/stat"))("the data directory lock", () => {
  test("is refused while its owner lives, naming its pid, and taken over once the owner is killed hard", async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "waypost-lock-"));
    const owner = await startSleeper();
    writeFileSync(path.join(dataDir, lockFileName), `${owner.pid}\n${startTimeOf(owner.pid!)}\n${bootId()}\n`);

    await expect(lockDataDirectory({ dataDir, logger })).rejects.toThrow(
      `the data directory ${dataDir} is in use by another Waypost (pid ${owner.pid})`,
    );

    owner.kill("SIGKILL");
    await new Promise((resolve) => owner.once("exit", resolve));
    const lock = await lockDataDirectory({ dataDir, logger });
    expect(readFileSync(lock.file, "utf8").split("\n")[0]).toBe(String(process.pid));
    await lock.release();
    expect(existsSync(lock.file)).toBe(false);
  });

  test("a lock whose pid now belongs to a later process, or to a previous boot, is stale", async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "waypost-lock-"));
    const later = await startSleeper();
    // The pid is live, but its process started at another time than the owner did.
    writeFileSync(path.join(dataDir, lockFileName), `${later.pid}\n1\n${bootId()}\n`);
    const first = await lockDataDirectory({ dataDir, logger });
    await first.release();

    // Same pid and start time, but written before a reboot.
    writeFileSync(path.join(dataDir, lockFileName), `${later.pid}\n${startTimeOf(later.pid!)}\nanother-boot\n`);
    const second = await lockDataDirectory({ dataDir, logger });
    await second.release();
    later.kill("SIGKILL");
  });

  test("one process holds it at a time, and releasing leaves another owner's lock alone", async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "waypost-lock-"));
    const lock = await lockDataDirectory({ dataDir, logger });
    await expect(lockDataDirectory({ dataDir, logger })).rejects.toThrow(`(pid ${process.pid})`);
    await lock.release();

    const again = await lockDataDirectory({ dataDir, logger });
    const owner = await startSleeper();
    const theirs = `${owner.pid}\n${startTimeOf(owner.pid!)}\n${bootId()}\n`;
    // Taken over in between (say the file was removed by hand and another Waypost started).
    writeFileSync(again.file, theirs);
    await again.release();
    expect(readFileSync(again.file, "utf8")).toBe(theirs);
    owner.kill("SIGKILL");
  });
});
