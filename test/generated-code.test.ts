import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));

function files(dir: string, base = dir): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? files(full, base) : [path.relative(base, full)];
  });
}

test("gen/ is exactly what buf generate makes from proto/", () => {
  const out = mkdtempSync(path.join(tmpdir(), "waypost-gen-"));
  const buf = path.join(root, "node_modules/.bin/buf");
  execFileSync(buf, ["generate", "--output", out], {
    cwd: root,
    env: { ...process.env, PATH: `${path.join(root, "node_modules/.bin")}:${process.env.PATH}` },
  });
  const fresh = path.join(out, "gen");
  const committed = path.join(root, "gen");
  expect(files(fresh).sort()).toEqual(files(committed).sort());
  for (const file of files(committed)) {
    expect(readFileSync(path.join(fresh, file), "utf8"), file).toBe(readFileSync(path.join(committed, file), "utf8"));
    expect(readFileSync(path.join(committed, file), "utf8").startsWith("// @generated")).toBe(true);
  }
});

test("proto/ passes buf lint", () => {
  const buf = path.join(root, "node_modules/.bin/buf");
  expect(() => execFileSync(buf, ["lint"], { cwd: root, stdio: "pipe" })).not.toThrow();
});
