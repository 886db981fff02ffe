import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  root: fileURLToPath(new URL("..", import.meta.url)),
  test: {
    include: ["test/**/*.test.ts"],
    // One migrated template database per run; each file copies it.
    globalSetup: ["test/global-setup.ts"],
    // A bound for a test that hangs, not a speed check: on a busy two-core
    // machine a test that starts processes (the CLI's) has taken over 30 s.
    testTimeout: 120_000,
    hookTimeout: 60_000,
    // Test files share one Postgres server but each gets its own database.
    fileParallelism: true,
    maxWorkers: 2,
    // A worker runs file after file with the modules it has loaded: loading
    // the server's modules afresh was most of a small file's cost. Each
    // file still gets its own database and servers; a file that patches a
    // module or process.env puts it back in afterAll.
    isolate: false,
  },
});
