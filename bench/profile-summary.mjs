// @ts-check
// Summarises a V8 CPU profile (from BENCH_CPU_PROF=dir, see README) as the
// top self-time functions and the time per module, in percent of the busy
// (non-idle) time and in µs per unit of work when the work count is given.
//
//   node bench/profile-summary.mjs FILE.cpuprofile [--per=N] [--from=S] [--to=S] [--top=25] [--json]
//
// `--per=N`: the calls (ingest) or webhooks (burn-down) the process handled
// in the window, to print µs per call or per webhook. `--from`/`--to`:
// seconds since the profile started, to leave out start-up (module loading,
// first connections) and shutdown.
//
// The profiler samples wall-clock time while the thread runs or is runnable:
// on a loaded machine a syscall that wakes another process on loopback
// (writev to Postgres or to a webhook) is charged the time the kernel gives
// that process, so its share is an upper bound; compare with the process's
// CPU time (the scenarios print it).
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * The parts of a .cpuprofile (V8's Profiler.Profile) read here.
 * @typedef {{
 *   nodes: Array<{ id: number, callFrame: { functionName: string, url: string, lineNumber: number } }>,
 *   samples: number[],
 *   timeDeltas: number[],
 * }} CpuProfile
 */

/**
 * Self time per function and per module, in µs, from a .cpuprofile object.
 * @param {CpuProfile} profile
 * @param {{ fromUs?: number, toUs?: number }} [window] microseconds since the profile started
 */
export function summariseProfile(profile, { fromUs = 0, toUs = Infinity } = {}) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  /** @type {Map<number, number>} */
  const self = new Map();
  let at = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    if (at < fromUs || at > toUs) continue;
    const id = profile.samples[i];
    if (id === undefined) continue;
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  /** @type {Map<string, number>} */
  const functions = new Map();
  /** @type {Map<string, number>} */
  const modules = new Map();
  let idle = 0;
  let busy = 0;
  for (const [id, us] of self) {
    const node = byId.get(id);
    if (!node) throw new Error(`the profile samples node ${id}, which it does not list`);
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === "(idle)") {
      idle += us;
      continue;
    }
    busy += us;
    const name = `${functionName || "(anonymous)"} ${shortUrl(url)}${url ? `:${lineNumber + 1}` : ""}`;
    functions.set(name, (functions.get(name) ?? 0) + us);
    const module = moduleOf(functionName, url);
    modules.set(module, (modules.get(module) ?? 0) + us);
  }
  const sorted = (/** @type {Map<string, number>} */ map) => [...map].sort((a, b) => b[1] - a[1]);
  return { busyUs: busy, idleUs: idle, functions: sorted(functions), modules: sorted(modules) };
}

/** @param {string} url */
function shortUrl(url) {
  if (!url) return "";
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) return url.slice(nm + 13);
  const dist = url.indexOf("/dist/");
  if (dist >= 0) return url.slice(dist + 6);
  return url.replace(/^file:\/\//, "");
}

/** A package, a Waypost source file, a Node internal area, or V8's own ((garbage collector), (program)). */
/**
 * @param {string} functionName
 * @param {string} url
 */
function moduleOf(functionName, url) {
  if (!url) return functionName.startsWith("(") ? functionName : "(native)";
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const parts = url.slice(nm + 13).split("/");
    const first = parts[0] ?? "";
    return first.startsWith("@") ? `${first}/${parts[1]}` : first;
  }
  if (url.startsWith("node:")) return url.split("/").slice(0, 3).join("/");
  return shortUrl(url);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [file, ...rest] = process.argv.slice(2);
  if (!file) throw new Error("usage: node bench/profile-summary.mjs FILE.cpuprofile [--per=N] [--from=S] [--to=S] [--top=25] [--json]");
  /**
   * @template {number | undefined} Fallback
   * @param {string} name
   * @param {Fallback} fallback
   * @returns {number | Fallback}
   */
  const option = (name, fallback) => {
    const arg = rest.find((a) => a.startsWith(`--${name}=`));
    return arg ? Number(arg.slice(name.length + 3)) : fallback;
  };
  const per = option("per", undefined);
  const top = option("top", 25);
  const summary = summariseProfile(JSON.parse(readFileSync(file, "utf8")), {
    fromUs: option("from", 0) * 1e6,
    toUs: option("to", Infinity) * 1e6,
  });
  const row = (/** @type {[string, number]} */ [name, us]) => ({
    name,
    pct: Math.round((us / summary.busyUs) * 1000) / 10,
    ...(per ? { us_per_unit: Math.round((us / per) * 100) / 100 } : {}),
  });
  const out = {
    busy_s: Math.round(summary.busyUs / 1e4) / 100,
    idle_s: Math.round(summary.idleUs / 1e4) / 100,
    ...(per ? { units: per, busy_us_per_unit: Math.round((summary.busyUs / per) * 10) / 10 } : {}),
    functions: summary.functions.slice(0, top).map(row),
    modules: summary.modules.slice(0, top).map(row),
  };
  if (rest.includes("--json")) process.stdout.write(`${JSON.stringify(out)}\n`);
  else {
    console.log(`busy ${out.busy_s} s, idle ${out.idle_s} s${per ? `, ${out.busy_us_per_unit} µs per unit over ${per}` : ""}`);
    /** @type {Array<[string, typeof out.functions]>} */
    const sections = [
      ["self time by function", out.functions],
      ["self time by module", out.modules],
    ];
    for (const [title, rows] of sections) {
      console.log(`\n${title}:`);
      for (const r of rows)
        console.log(`${String(r.pct).padStart(5)} %  ${per ? `${String(r.us_per_unit).padStart(7)} µs  ` : ""}${r.name}`);
    }
  }
}
