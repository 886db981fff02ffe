// @ts-check
// The targets as a run checks them: each scenario that has one records
// its value here, and the run ends with one summary line listing them all.
import { report } from "./stats.mjs";

/** @typedef {{ target: string, value: number | null, goal: string, met: boolean, note?: string }} TargetCheck */

/** @type {TargetCheck[]} */
const checks = [];

/**
 * Records a target: met when `value` is at least `goal` (or at most, with `atMost`). A null value is not met.
 * @param {string} target what is measured, e.g. "warehouse calls/s end to end"
 * @param {number | null | undefined} value
 * @param {number} goal
 * @param {{ atMost?: boolean, note?: string }} [options]
 * @returns {{ goal: string, met: boolean }} to print on the scenario's own line
 */
export function checkTarget(target, value, goal, { atMost = false, note } = {}) {
  const met = typeof value === "number" && (atMost ? value <= goal : value >= goal);
  const check = { target, value: value ?? null, goal: `${atMost ? "<=" : ">="} ${goal}`, met, ...(note ? { note } : {}) };
  checks.push(check);
  return { goal: check.goal, met };
}

/** @type {Array<{ scenario: string, layout: string, error: string }>} */
const failures = [];

/**
 * A run of a scenario that could not measure (the build lacks what it needs): prints its line with
 * `error`, records its target as not met, and makes the run exit with status 1 after the others.
 * @param {string} scenario
 * @param {string} layout the run's `layout` field
 * @param {string} target as checkTarget names it
 * @param {number} goal
 * @param {string} error
 */
export function recordFailure(scenario, layout, target, goal, error) {
  failures.push({ scenario, layout, error });
  report({ scenario, layout, error });
  checkTarget(target, null, goal, { note: error });
}

/** Whether a run could not measure (recordFailure). */
export const anyFailed = () => failures.length > 0;

/** The run's last line: every target checked, met or not, and the runs that failed. */
export function summaryLine() {
  return {
    scenario: "summary",
    targets: checks.map((c) => ({ ...c, met: c.met ? "met" : "not met" })),
    met: checks.filter((c) => c.met).length,
    not_met: checks.filter((c) => !c.met).length,
    ...(failures.length > 0 ? { failed_runs: failures } : {}),
  };
}

/**
 * A rate over its bare reference, two decimals (null when either is missing).
 * @param {number | null | undefined} rate
 * @param {number | null | undefined} bare
 */
export const ratioOf = (rate, bare) => (rate && bare ? Math.round((rate / bare) * 100) / 100 : null);
