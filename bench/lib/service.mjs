// @ts-check
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export const adminToken = "bench-admin-token-0123456789";
const entry = fileURLToPath(new URL("../../dist/server.js", import.meta.url));

/** @typedef {Awaited<ReturnType<typeof startService>>} Service */

/**
 * `node dist/server.js` as the user runs it, in its own process.
 * @param {string} databaseUrl
 * @param {Record<string, string>} [env] added to the service's environment
 * @param {{ entry?: string }} [options] `entry`: another build's dist/server.js (a before/after comparison)
 */
export async function startService(databaseUrl, env = {}, options = {}) {
  // BENCH_CPU_PROF=dir writes a V8 CPU profile of each service process there.
  const profile = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const startedAt = performance.now();
  const child = spawn(process.execPath, [...profile, options.entry ?? entry], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: "0",
      HOST: "127.0.0.1",
      WAYPOST_ADMIN_TOKEN: adminToken,
      WAYPOST_ALLOW_PRIVATE_DESTINATIONS: "true",
      WAYPOST_DATA_DIR: mkdtempSync(path.join(tmpdir(), "waypost-bench-")),
      WAYPOST_LOG_LEVEL: "info",
      // Scenarios measure the per-call layout unless they ask for the call log (their lines say which).
      WAYPOST_CALL_LOG: "off",
      // And without identity resolution (on in production), unless they ask for it (the identity scenario).
      WAYPOST_IDENTITY: "off",
      ...env,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve(code ?? signal)));
  const url = await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on("line", (line) => {
      if (line.includes("Waypost is listening")) resolve(JSON.parse(line).url);
      else if (line.includes('"level":50') || line.includes('"level":40')) process.stderr.write(`${line}\n`);
    });
    exited.then((code) => reject(new Error(`service exited (${code}) before listening`)));
  });
  return {
    url,
    pid: child.pid,
    /** Seconds since this process was spawned: where a window lies in its CPU profile. */
    secondsSinceStart: (at = performance.now()) => Math.round(at - startedAt) / 1000,
    /** Peak resident memory so far, from the kernel (VmHWM), in MB. */
    peakRssMb: () => peakRssMb(child.pid),
    /** waypost_trace_spans_dropped_total from /metrics, summed over its reasons. */
    async droppedSpans() {
      const text = await (await fetch(`${url}/metrics`)).text();
      return [...text.matchAll(/^waypost_trace_spans_dropped_total\{[^}]*\} (\S+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
    },
    async stop() {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/**
 * Peak resident memory of a process so far (VmHWM), in MB.
 * @param {number | undefined} pid
 */
export function peakRssMb(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}
