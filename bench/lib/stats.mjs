// @ts-check
/**
 * @param {number[]} sorted
 * @param {number} p
 */
export function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? null;
}

/** @param {Iterable<number>} values */
export function summarize(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const round = (/** @type {number | null} */ v) => (v === null ? null : Math.round(v * 100) / 100);
  return { p50: round(percentile(sorted, 50)), p99: round(percentile(sorted, 99)), max: round(sorted[sorted.length - 1] ?? null) };
}

/**
 * One result line: a JSON object, machine-readable.
 * @param {object} fields
 */
export function report(fields) {
  process.stdout.write(`${JSON.stringify(fields)}\n`);
}

export const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));
