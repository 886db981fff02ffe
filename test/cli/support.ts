import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { TestServer } from "../helpers/server.js";

/** The built CLI (`npm test` builds first), run as users run it. */
export const cliEntry = fileURLToPath(new URL("../../dist/src/cli/main.js", import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The environment of a CLI run: the server's URL and token, and nothing of
 * this machine's WAYPOST_* settings. An empty data directory, so no token
 * file is found by accident.
 */
export function cliEnv(server: TestServer | undefined, extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME };
  env.WAYPOST_DATA_DIR = mkdtempSync(path.join(tmpdir(), "waypost-cli-"));
  if (server) {
    env.WAYPOST_URL = server.url;
    env.WAYPOST_ADMIN_TOKEN = server.adminToken;
  }
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

/** Runs `waypost ...args` to completion. */
export function waypost(args: string[], env: NodeJS.ProcessEnv, cwd?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliEntry, ...args], { env, cwd, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** `waypost --json ...` that must succeed: its one JSON document. */
export async function waypostJson<T = Record<string, unknown>>(args: string[], env: NodeJS.ProcessEnv): Promise<T> {
  const result = await waypost([...args, "--json"], env);
  if (result.code !== 0) throw new Error(`waypost ${args.join(" ")} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

export interface RunningCli {
  child: ChildProcess;
  lines: string[];
  /** Resolves with the first output line matching. */
  waitForLine(match: (line: string) => boolean): Promise<string>;
  exited: Promise<number | null>;
  /** What it wrote to stderr so far. */
  stderr(): string;
}

/** Starts a long-running command (deliveries tail), reading its output line by line. */
export function startWaypost(args: string[], env: NodeJS.ProcessEnv): RunningCli {
  const child = spawn(process.execPath, [cliEntry, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
  const lines: string[] = [];
  const waiters: Array<{ match: (line: string) => boolean; resolve: (line: string) => void }> = [];
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  createInterface({ input: child.stdout! }).on("line", (line) => {
    lines.push(line);
    for (const waiter of [...waiters]) {
      if (waiter.match(line)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  });
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  return {
    child,
    lines,
    exited,
    stderr: () => stderr,
    waitForLine(match) {
      const seen = lines.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        waiters.push({ match, resolve });
        void exited.then((code) => reject(new Error(`waypost exited (${code}) first; stderr: ${stderr}`)));
      });
    },
  };
}

/** The rows of a CLI table (no header), each split on the column gaps (two spaces or more). */
export function tableRows(stdout: string): string[][] {
  return stdout
    .trimEnd()
    .split("\n")
    .slice(1)
    .map((line) => line.split(/ {2,}/));
}
