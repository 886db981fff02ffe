import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

// In a clone the README runs the CLI as `npm run -s waypost -- …`: the
// script runs the built bin, and -s keeps npm's banner out of stdout, so
// --json output can be redirected to a file as the README does.
const root = fileURLToPath(new URL("../..", import.meta.url));

function npmRun(args: string[]): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("npm", ["run", "-s", "waypost", "--", ...args], { cwd: root, stdio: ["ignore", "pipe", "inherit"] });
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout }));
  });
}

test("npm run -s waypost -- passes the arguments to the CLI and prints only its output", async () => {
  const help = await npmRun(["sources", "--help"]);
  expect(help.code).toBe(0);
  expect(help.stdout.startsWith("Usage: waypost sources")).toBe(true);
  const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
  expect(readme).toContain("npm run -s waypost -- sources create --name web --json > .waypost/tour-source.json");
  expect(readme).not.toContain("npx waypost");
});
