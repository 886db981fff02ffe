import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { testAdminToken } from "./server.js";

export const entry = fileURLToPath(new URL("../../dist/server.js", import.meta.url));

/** Runs `node dist/server.js` to its end; for starts that must fail. */
export function runToExit(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [entry], { env, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("exit", (code) => resolve({ code, stderr }));
  });
}

export interface ServiceProcess {
  child: ChildProcess;
  /** http://127.0.0.1:PORT of its health and metrics endpoints. */
  url: string;
  /** Resolves with the exit code (or the signal's name). */
  exited: Promise<number | string>;
  /** Every log line so far. */
  logs: string[];
}

/** The environment a service process gets: a test's settings over the defaults; DATABASE_URL undefined runs the embedded Postgres. */
export function serviceEnv(databaseUrl: string | undefined, env: Record<string, string> = {}): NodeJS.ProcessEnv {
  const result: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: "0",
    HOST: "127.0.0.1",
    WAYPOST_ADMIN_TOKEN: testAdminToken,
    WAYPOST_ALLOW_PRIVATE_DESTINATIONS: "true",
    WAYPOST_DATA_DIR: mkdtempSync(path.join(tmpdir(), "waypost-proc-")),
    WAYPOST_LOG_LEVEL: "info",
    ...env,
  };
  if (databaseUrl === undefined) delete result.DATABASE_URL;
  else result.DATABASE_URL = databaseUrl;
  return result;
}

/** Starts `node dist/server.js` (built by `npm test`) as a separate process. */
export async function startServiceProcess(databaseUrl: string, env: Record<string, string> = {}): Promise<ServiceProcess> {
  return launchService(process.execPath, [entry], serviceEnv(databaseUrl, env));
}

/**
 * Runs a command that starts the service (node, or npm start) and resolves once it listens.
 * `detached`: in a process group of its own, as a terminal runs its foreground job.
 */
export async function launchService(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd?: string,
  options: { detached?: boolean } = {},
): Promise<ServiceProcess> {
  const child = spawn(command, args, { env, cwd, stdio: ["ignore", "pipe", "pipe"], detached: options.detached ?? false });
  const logs: string[] = [];
  const exited = new Promise<number | string>((resolve) => child.on("exit", (code, signal) => resolve(code ?? signal ?? -1)));
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on("line", (line) => {
      logs.push(line);
      const parsed = safeParse(line);
      if (parsed?.msg === "Waypost is listening") resolve(parsed.url as string);
    });
    child.stderr!.on("data", (chunk: Buffer) => logs.push(chunk.toString()));
    void exited.then((code) => reject(new Error(`service exited (${code}) before listening:\n${logs.join("\n")}`)));
  });
  return { child, url, exited, logs };
}

function safeParse(line: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** Polls a condition in the database until it holds: the other process gives no event to await. */
export async function eventually<T>(check: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
