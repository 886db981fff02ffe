import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, test } from "vitest";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "../../src/db/embedded.js";
import { createLogger } from "../../src/logger.js";
import { eventually } from "../helpers/process.js";

// What a start finds in the cluster directory after a crash: a Postgres
// still running with nobody to stop it, or a postmaster.pid naming a pid
// that has since gone to another program. Real Postgres, real processes.

const embeddedModule = fileURLToPath(new URL("../../dist/src/db/embedded.js", import.meta.url));
const children: ChildProcess[] = [];
const servers: EmbeddedPostgres[] = [];

afterAll(async () => {
  for (const server of servers) await server.stop().catch(() => {});
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

/** A data directory the embedded Postgres can use (as root it runs as another user). */
function dataDirectory(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "waypost-orphan-"));
  chmodSync(dir, 0o755);
  return dir;
}

/** A logger whose lines the test can read. */
function recordingLogger() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { logger: createLogger("info", sink), lines };
}

async function start(dataDir: string, logger = createLogger("silent")): Promise<EmbeddedPostgres> {
  const server = await startEmbeddedPostgres({ dataDir, logger });
  servers.push(server);
  return server;
}

async function stop(server: EmbeddedPostgres): Promise<void> {
  await server.stop();
  servers.splice(servers.indexOf(server), 1);
}

function alive(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "")[0] !== "Z";
  } catch {
    return false;
  }
}

const postmasterPidFile = (dataDir: string) => path.join(dataDir, "postgres", "postmaster.pid");

/**
 * Another node process runs the embedded Postgres of `dataDir` (in a process
 * group of its own, as the server runs it) and then drops the data directory
 * lock, as a Waypost from before the lock would run: resolves with it and
 * its postmaster's pid once Postgres is up.
 */
async function startLocklessOwner(dataDir: string): Promise<{ child: ChildProcess; postmaster: number }> {
  const script = `
    import { unlinkSync } from "node:fs";
    import { startEmbeddedPostgres } from ${JSON.stringify(embeddedModule)};
    import { createLogger } from ${JSON.stringify(embeddedModule.replace(/db\/embedded\.js$/, "logger.js"))};
    await startEmbeddedPostgres({ dataDir: ${JSON.stringify(dataDir)}, logger: createLogger("silent"), ownProcessGroup: true });
    unlinkSync(${JSON.stringify(path.join(dataDir, "waypost.pid"))});
    console.log("ready");
    setInterval(() => {}, 60_000);
  `;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on("line", (line) => line === "ready" && resolve());
    child.on("exit", (code) => reject(new Error(`the owner exited (${code}) before its Postgres ran`)));
  });
  return { child, postmaster: Number(readFileSync(postmasterPidFile(dataDir), "utf8").split("\n")[0]) };
}

describe.skipIf(!existsSync("/proc/self/stat"))("a cluster left behind", () => {
  test("a Postgres whose node parent lives is refused by pid; once that parent is killed hard, it is stopped and the cluster starts", async () => {
    const dataDir = dataDirectory();
    const owner = await startLocklessOwner(dataDir);

    await expect(start(dataDir)).rejects.toThrow(`(pid ${owner.postmaster}) is run by process ${owner.child.pid}, which is still alive`);
    expect(alive(owner.postmaster)).toBe(true);

    owner.child.kill("SIGKILL");
    await new Promise((resolve) => owner.child.once("exit", resolve));
    expect(alive(owner.postmaster)).toBe(true);

    const { logger, lines } = recordingLogger();
    const server = await start(dataDir, logger);
    expect(lines.join("")).toContain("stopping the embedded Postgres left running by a Waypost that is gone");
    expect(alive(owner.postmaster)).toBe(false);
    await stop(server);
  }, 120_000);

  test("a postmaster.pid whose pid now belongs to another program is removed, and the cluster starts", async () => {
    const dataDir = dataDirectory();
    const first = await start(dataDir);
    const content = readFileSync(postmasterPidFile(dataDir), "utf8");
    await stop(first);
    // Some other program of the cluster's user now has the pid (as after a
    // reboot or in a fresh container): Postgres alone would take it for a
    // live postmaster.
    const owner = statSync(path.join(dataDir, "postgres"));
    const other = spawn("sleep", ["600"], { uid: owner.uid, gid: owner.gid, stdio: "ignore" });
    children.push(other);
    await eventually(async () => alive(other.pid!));
    writeFileSync(postmasterPidFile(dataDir), content.replace(/^\d+/, String(other.pid)), { mode: 0o600 });
    chownSync(postmasterPidFile(dataDir), owner.uid, owner.gid);

    const { logger, lines } = recordingLogger();
    const second = await start(dataDir, logger);
    expect(lines.join("")).toContain("removing a stale postmaster.pid");
    // The other program is left alone.
    expect(alive(other.pid!)).toBe(true);
    await stop(second);
    other.kill("SIGKILL");
  }, 120_000);

  test("a postmaster.pid whose pid is gone is Postgres's to handle: the cluster starts", async () => {
    const dataDir = dataDirectory();
    const first = await start(dataDir);
    const content = readFileSync(postmasterPidFile(dataDir), "utf8");
    await stop(first);
    const gone = spawn("true", [], { stdio: "ignore" });
    await new Promise((resolve) => gone.once("exit", resolve));
    const owner = statSync(path.join(dataDir, "postgres"));
    writeFileSync(postmasterPidFile(dataDir), content.replace(/^\d+/, String(gone.pid)), { mode: 0o600 });
    chownSync(postmasterPidFile(dataDir), owner.uid, owner.gid);

    const second = await start(dataDir);
    const running = Number(readFileSync(postmasterPidFile(dataDir), "utf8").split("\n")[0]);
    expect(running).not.toBe(gone.pid);
    expect(alive(running)).toBe(true);
    await stop(second);
  }, 120_000);

  test("a process that exits without stopping its embedded Postgres sends it SIGINT on the way out, and nothing fails after", async () => {
    const dataDir = dataDirectory();
    // The exit event is emitted by hand, as a test runner's worker does on
    // its way out, so the process lives on to see what the exit listeners
    // left behind (the package's own once ended in an unhandled rejection).
    const script = `
      import { existsSync, readFileSync } from "node:fs";
      import { startEmbeddedPostgres } from ${JSON.stringify(embeddedModule)};
      import { createLogger } from ${JSON.stringify(embeddedModule.replace(/db\/embedded\.js$/, "logger.js"))};
      process.on("unhandledRejection", (error) => { console.error("unhandled: " + error); process.exitCode = 3; });
      // Not a top-level await: Node's own exit listener would mark that one unsettled.
      void (async () => {
      await startEmbeddedPostgres({ dataDir: ${JSON.stringify(dataDir)}, logger: createLogger("silent") });
      const postmaster = Number(readFileSync(${JSON.stringify(postmasterPidFile(dataDir))}, "utf8").split("\\n")[0]);
      process.emit("exit", 0);
      // Gone from /proc: stopped and reaped, so its exit event has run here.
      while (existsSync("/proc/" + postmaster)) await new Promise((resolve) => setTimeout(resolve, 20));
      await new Promise((resolve) => setImmediate(resolve));
      console.log("stopped " + postmaster);
      })();
    `;
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "pipe"] });
    children.push(child);
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise((resolve) => child.once("exit", resolve));
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    expect(stdout).toMatch(/^stopped \d+\n$/);
  }, 120_000);
});
