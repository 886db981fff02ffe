import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";
import { createMetrics } from "../src/metrics.js";

// The README's tour and the operator-facing docs it leads to stay true to the code.

const root = fileURLToPath(new URL("..", import.meta.url));
const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
const production = readFileSync(new URL("../docs/production.md", import.meta.url), "utf8");

function section(text: string, heading: string): string {
  const start = text.indexOf(`\n## ${heading}\n`);
  expect(start, heading).toBeGreaterThan(0);
  const end = text.indexOf("\n## ", start + 1);
  return text.slice(start, end === -1 ? undefined : end);
}

test("docs/production.md's 'Operation' lists every metric Waypost defines, and each of its topics once", async () => {
  const operation = section(production, "Operation");
  const names = (await createMetrics().registry.getMetricsAsJSON())
    .map((metric) => metric.name)
    // The Node process metrics are named as a family.
    .filter((name) => !name.startsWith("waypost_process_") && !name.startsWith("waypost_nodejs_"));
  expect(names.length).toBeGreaterThan(5);
  expect(names.filter((name) => !operation.includes(`\`${name}`))).toEqual([]);
  expect(operation).toContain("`waypost_process_*`, `waypost_nodejs_*`");
  const topics = [...operation.matchAll(/^- \*\*(.+?)\*\*/gm)].map((m) => m[1]);
  expect(topics.length).toBeGreaterThan(5);
  expect(topics.filter((topic, i) => topics.indexOf(topic) !== i)).toEqual([]);
  // Each bullet's continuation lines are indented; a line that is neither is a stray fragment.
  const stray = operation.split("\n").filter((line) => /^ {2}\S/.test(line) === false && /^[a-z(`]/.test(line));
  expect(stray).toEqual([]);
});

test("the README's tour writes its files only where git ignores them (the source file holds a live write key)", () => {
  const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const written = blocks
    .flatMap((block) => [...block.matchAll(/(?:\btee|>)\s+([\w./-]+)/g)].map((m) => m[1]!))
    .filter((file) => file !== "/dev/null");
  expect(written.length).toBeGreaterThan(0);
  const committable = written.filter((file) => {
    try {
      // Exit status 0: ignored; 1: not ignored.
      execFileSync("git", ["check-ignore", "-q", "--no-index", file], { cwd: root });
      return false;
    } catch {
      return true;
    }
  });
  expect(committable).toEqual([]);
});

test("the README's folder map has a row for every folder of src/, and no row for a folder that is gone", () => {
  const map = section(readme, "Where things live");
  const rows = [...map.matchAll(/^\| `(src\/[^`]+\/)` \|/gm)].map((m) => m[1]!);
  expect(rows.length).toBeGreaterThan(10);
  const folders = readdirSync(new URL("../src/", import.meta.url), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => `src/${entry.name}/`);
  expect(folders.filter((folder) => !rows.includes(folder))).toEqual([]);
  expect(rows.filter((row) => !existsSync(new URL(`../${row}`, import.meta.url)))).toEqual([]);
});

test("the README stays short: under 300 lines", () => {
  expect(readme.split("\n").length).toBeLessThan(300);
});
