import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect, test } from "vitest";

// The licence as users meet it: the file in the repository and in the
// client's npm tarball, the package fields npm shows, and the notices the
// runtime dependencies ask to be carried on.

const run = promisify(execFile);
const root = fileURLToPath(new URL("..", import.meta.url));
const read = (file: string) => readFileSync(path.join(root, file), "utf8");

test("LICENSE is the full Apache License 2.0, at the root and in packages/client", () => {
  const licence = read("LICENSE");
  expect(licence.trimStart().startsWith("Apache License\n                           Version 2.0, January 2004")).toBe(true);
  // All nine sections and the end of the terms: the whole text, not a summary line.
  for (const section of ["1. Definitions.", "4. Redistribution.", "9. Accepting Warranty or Additional Liability."]) {
    expect(licence).toContain(section);
  }
  expect(licence).toContain("END OF TERMS AND CONDITIONS");
  expect(read("packages/client/LICENSE")).toBe(licence);
});

test("every package.json of the repository says Apache-2.0", async () => {
  const { stdout } = await run("git", ["ls-files", "--cached", "--others", "--exclude-standard", "*package.json"], { cwd: root });
  const manifests = stdout.split("\n").filter((file) => file.endsWith("package.json"));
  expect(manifests).toContain("package.json");
  expect(manifests).toContain("packages/client/package.json");
  const fields = Object.fromEntries(manifests.map((file) => [file, (JSON.parse(read(file)) as { license?: string }).license]));
  expect(fields).toEqual(Object.fromEntries(manifests.map((file) => [file, "Apache-2.0"])));
});

test("the client's npm tarball holds LICENSE", async () => {
  // --ignore-scripts: the file list without prepack's build.
  const { stdout } = await run("npm", ["pack", "--dry-run", "--json", "--ignore-scripts", "--loglevel=error"], {
    cwd: path.join(root, "packages/client"),
    maxBuffer: 16 * 1024 * 1024,
  });
  const [packed] = JSON.parse(stdout) as Array<{ files: Array<{ path: string; size: number }> }>;
  const licence = packed!.files.find((file) => file.path === "LICENSE");
  expect(licence?.size).toBe(Buffer.byteLength(read("LICENSE")));
});

test("a runtime dependency's NOTICE file is carried on in a root NOTICE naming it", async () => {
  const { stdout } = await run("npm", ["ls", "--omit=dev", "--all", "--parseable", "--loglevel=error"], {
    cwd: root,
    maxBuffer: 16 * 1024 * 1024,
  }).catch((error: { stdout: string }) => error);
  const dependencies = [...new Set(stdout.split("\n").filter((dir) => dir.includes(`${path.sep}node_modules${path.sep}`)))];
  // Sanity: the list is the runtime tree (pg, the Connect packages), not empty.
  expect(dependencies.some((dir) => dir.endsWith(`${path.sep}pg`))).toBe(true);
  const withNotice = dependencies
    .filter((dir) => existsSync(dir) && readdirSync(dir).some((name) => /^notice(\.(md|txt))?$/i.test(name)))
    .map((dir) => (JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { name: string }).name);
  const notice = existsSync(path.join(root, "NOTICE")) ? read("NOTICE") : "";
  expect(withNotice.filter((name) => !notice.includes(name))).toEqual([]);
});

test("the README names the licence", () => {
  expect(read("README.md")).toMatch(/Apache License 2\.0\s+\(\[LICENSE\]\(LICENSE\)\)/);
});
