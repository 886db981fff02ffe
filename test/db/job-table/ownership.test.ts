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
  expect(offenders(/UPDATE\s+deliveries|INSERT\s+INTO\s+deliveries/i, inJobTable)).toEqual([]);
});

test("the fence is written once: only fence.ts writes lease_token", () => {
  expect(offenders(/lease_token\s*=\s*\S+\s*\+\s*1/, (file) => file === path.join("db", "job-table", "fence.ts"))).toEqual([]);
  // Every UPDATE of the job table is built by transitionSql, which adds the fence.
  expect(offenders(/UPDATE\s+deliveries/i, (file) => file === path.join("db", "job-table", "fence.ts"))).toEqual([]);
});

test("the wake-up channel is named once and notified only by the job table", () => {
  expect(offenders(/pg_notify/, (file) => file === path.join("db", "job-table", "notify.ts"))).toEqual([]);
  expect(offenders(/["'`]waypost_deliveries["'`]/, (file) => file === path.join("db", "job-table", "notify.ts"))).toEqual([]);
});

test("the job table is reached through its index only", () => {
  const deep = /from\s+["'][^"']*job-table\/(?!index\.js)[^"']+["']/;
  expect(offenders(deep, inJobTable)).toEqual([]);
});

test("no SQL outside src/db", () => {
  const inDb = (file: string) => file.startsWith(`db${path.sep}`);
  expect(offenders(/\.query(<[^>]*>)?\(\s*["'`]\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b/i, inDb)).toEqual([]);
});
