// @ts-check
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { report } from "../lib/stats.mjs";

const run = promisify(execFile);

/**
 * Scenario 4: graphile-worker and pg-boss burn down the same number of jobs,
 * each a signed JSON POST of the same body to the same sink with the same
 * concurrency budget, each in its own process as Waypost's worker is.
 * @param {{ db: import("../lib/postgres.mjs").Database, sink: import("../lib/sink.mjs").Sink, count: number, concurrency: number, waypostRate: number | undefined }} options
 */
export async function baselinesScenario({ db, sink, count, concurrency, waypostRate }) {
  /** @type {Record<string, { per_s?: number, error?: string }>} */
  const results = {};
  /** @type {Array<[string, string]>} */
  const scripts = [
    ["graphile-worker", "../baseline-graphile.mjs"],
    ["pg-boss", "../baseline-pgboss.mjs"],
  ];
  for (const [name, script] of scripts) {
    try {
      const { stdout } = await run(
        process.execPath,
        [fileURLToPath(new URL(script, import.meta.url)), db.url, sink.url, String(count), String(concurrency)],
        {
          maxBuffer: 1 << 20,
          timeout: 900_000,
        },
      );
      results[name] = JSON.parse(stdout.trim().split("\n").pop() ?? "");
    } catch (error) {
      results[name] = { error: String((error instanceof Error ? error.message : undefined) ?? error).slice(0, 300) };
    }
  }
  const ratio = (/** @type {string} */ name) => {
    const theirs = results[name]?.per_s;
    // (Without Waypost's rate the ratio is null, as JSON writes NaN.)
    return theirs && waypostRate !== undefined ? Math.round((waypostRate / theirs) * 100) / 100 : null;
  };
  report({
    scenario: "baselines",
    jobs: count,
    concurrency,
    waypost_per_s: waypostRate,
    graphile_worker_per_s: results["graphile-worker"]?.per_s ?? null,
    pg_boss_per_s: results["pg-boss"]?.per_s ?? null,
    waypost_vs_graphile_worker: ratio("graphile-worker"),
    waypost_vs_pg_boss: ratio("pg-boss"),
    targets: { graphile_worker: 3, pg_boss: 6 },
    errors: Object.fromEntries(
      Object.entries(results)
        .filter(([, r]) => r.error)
        .map(([k, r]) => [k, r.error]),
    ),
  });
}
