// @ts-check
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * Runs a bench script (path relative to bench/) in its own Node process; resolves with the JSON object of its last stdout line.
 * @param {string} script
 * @param {Array<string | number>} args
 * @returns {Promise<any>}
 */
export async function runScript(script, args, { timeoutMs = 900_000 } = {}) {
  const { stdout } = await run(process.execPath, [fileURLToPath(new URL(`../${script}`, import.meta.url)), ...args.map(String)], {
    maxBuffer: 1 << 20,
    timeout: timeoutMs,
  });
  return JSON.parse(stdout.trim().split("\n").pop() ?? "");
}
