// @ts-check
// Which scenarios a run of bench/run.mjs runs, from its arguments.

/** Every scenario, in the order a run runs them. */
export const scenarioNames = [
  "ingest",
  "ingest-destinations",
  "plan-ingest",
  "routing-ingest",
  "subscription-ingest",
  "burn-down",
  "transform-burn-down",
  "amqp",
  "nats",
  "batched-webhooks",
  "integrations",
  "webhook-sources",
  "scaling",
  "citus",
  "idle-destinations",
  "end-to-end",
  "baselines",
  "isolation",
  "client",
  "cheap-requests",
  "ordering",
  "rate-limit",
  "warehouse",
  "warehouse-log",
  "lake",
  "tracing",
  "history",
  "retention",
  "backfill",
  "identity",
  "soak",
];

/**
 * A run without options: the targets (ingest, burn-down, warehouse, the broker kinds, batched
 * webhooks, integrations) and the feature comparisons that take under a minute each, so that the whole run stays
 * under about 15 minutes on the project's machine kind.
 */
export const defaultSet = [
  "ingest",
  "ingest-destinations",
  "plan-ingest",
  "routing-ingest",
  "subscription-ingest",
  "burn-down",
  "transform-burn-down",
  "amqp",
  "nats",
  "batched-webhooks",
  "integrations",
  "webhook-sources",
  "isolation",
  "client",
  "cheap-requests",
  "warehouse",
  "lake",
];

/** Names that stand for several scenarios. */
const aliases = /** @type {Record<string, string[]>} */ ({ brokers: ["amqp", "nats"] });

/** Minutes each, or gigabytes of disk: never part of `--all`. */
const slow = ["soak", "history", "retention", "backfill", "identity"];

/** Needs DATABASE_URL at a Citus coordinator: only by name. */
const needsCluster = ["citus"];

/**
 * `--only=a,b` (names or aliases), else the default set, or with `--all` every scenario but the slow
 * ones; `--NAME` adds one. An unknown name is an error that lists the known ones.
 * @param {string[]} args
 * @returns {Set<string>}
 */
export function selectScenarios(args) {
  const expand = (/** @type {string} */ name) => {
    const names = aliases[name] ?? [name];
    for (const n of names) {
      if (!scenarioNames.includes(n)) {
        throw new Error(`unknown scenario "${n}": known are ${[...scenarioNames, ...Object.keys(aliases)].join(", ")}`);
      }
    }
    return names;
  };
  const only = args.find((a) => a.startsWith("--only="));
  if (only) return new Set(only.slice("--only=".length).split(",").filter(Boolean).flatMap(expand));
  const base = args.includes("--all") ? scenarioNames.filter((n) => !slow.includes(n) && !needsCluster.includes(n)) : defaultSet;
  const added = args.filter((a) => a.startsWith("--") && [...scenarioNames, ...Object.keys(aliases)].includes(a.slice(2)));
  return new Set([...base, ...added.flatMap((a) => expand(a.slice(2)))]);
}
