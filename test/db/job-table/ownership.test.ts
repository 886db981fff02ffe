import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { expect, test } from "vitest";

const srcDir = new URL("../../../src/", import.meta.url).pathname;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith(".ts") ? [full] : [];
  });
}

const files = sourceFiles(srcDir).map((file) => ({ file: path.relative(srcDir, file), text: readFileSync(file, "utf8") }));

function offenders(pattern: RegExp, allowed: (file: string) => boolean): string[] {
  return files.filter(({ file, text }) => !allowed(file) && pattern.test(text)).map(({ file }) => file);
}

const inJobTable = (file: string) => file.startsWith(`db${path.sep}job-table${path.sep}`);

test("only the job table's own modules change deliveries rows or touch the lease", () => {
  expect(offenders(/lease_token|leased_until\s*=|lease_owner\s*=/, inJobTable)).toEqual([]);
  expect(offenders(/(UPDATE|INSERT\s+INTO|DELETE\s+FROM)\s+(delivery_queue|delivery_history)\b/i, inJobTable)).toEqual([]);
});

test("the fence is written once: only fence.ts writes lease_token", () => {
  expect(offenders(/lease_token\s*=\s*\S+\s*\+\s*1/, (file) => file === path.join("db", "job-table", "fence.ts"))).toEqual([]);
  // Every UPDATE of the queue, and every move between the queue and the
  // history, is built by fence.ts, which adds the fence; only enqueue.ts
  // inserts new deliveries.
  const fence = (file: string) => file === path.join("db", "job-table", "fence.ts");
  expect(
    offenders(/UPDATE\s+delivery_queue\b|DELETE\s+FROM\s+(delivery_queue|delivery_history)\b|INSERT\s+INTO\s+delivery_history\b/i, fence),
  ).toEqual([]);
  expect(
    offenders(/INSERT\s+INTO\s+delivery_queue/i, (file) => fence(file) || file === path.join("db", "job-table", "enqueue.ts")),
  ).toEqual([]);
});

test("each wake-up channel is named once and notified in one place: deliveries' by the job table, webhook requests' by hook-notify.ts", () => {
  // SQL's pg_notify: the job table's in its statements, every other channel's through db/notify.ts (hook-notify.ts's, the throttled NOTIFY's).
  const notifiers = [path.join("db", "job-table", "notify.ts"), path.join("db", "notify.ts")];
  expect(offenders(/pg_notify/, (file) => notifiers.includes(file))).toEqual([]);
  expect(offenders(/["'`]waypost_hooks["'`]/, (file) => file === path.join("db", "queries", "hook-notify.ts"))).toEqual([]);
  expect(offenders(/["'`]waypost_deliveries["'`]/, (file) => file === path.join("db", "job-table", "notify.ts"))).toEqual([]);
});

/**
 * The single-node reads the driver is made of: its imports in db/queries/,
 * and theirs there. They are the job table's own, and reach its filter and
 * status type directly: through the index they would run in a circle
 * (index → driver → read → index).
 */
function driverReads(): Set<string> {
  const queries = path.join("db", "queries");
  const found = new Set<string>();
  const visit = (file: string) => {
    const text = files.find((f) => f.file === file)?.text ?? "";
    for (const [, target] of text.matchAll(/from\s+["']([^"']+)\.js["']/g)) {
      const next = path.normalize(path.join(path.dirname(file), `${target}.ts`));
      if (next.startsWith(`${queries}${path.sep}`) && !found.has(next)) {
        found.add(next);
        visit(next);
      }
    }
  };
  visit(path.join("db", "job-table", "driver.ts"));
  return found;
}

test("the job table is reached through its index only", () => {
  const reads = driverReads();
  expect(reads).toContain(path.join("db", "queries", "delivery-search.ts"));
  expect(reads).toContain(path.join("db", "queries", "delivery-rows.ts"));
  const deep = /from\s+["'][^"']*job-table\/(?!index\.js)[^"']+["']/;
  expect(offenders(deep, (file) => inJobTable(file) || reads.has(file))).toEqual([]);
});

test("no SQL outside src/db (the warehouse loader's SQL is for the user's warehouse, not Waypost's database)", () => {
  const inDb = (file: string) => file.startsWith(`db${path.sep}`) || file.startsWith(`warehouse${path.sep}`);
  expect(offenders(/\.query(<[^>]*>)?\(\s*["'`]\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b/i, inDb)).toEqual([]);
});
