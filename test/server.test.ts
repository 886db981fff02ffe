import { mkdtempSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, expect } from "vitest";
import { loadConfig } from "../src/config.js";
import { createLogger } from "../src/logger.js";
import { startWaypost } from "../src/server.js";
import type { TestDatabase } from "./helpers/database.js";
import { testWith } from "./helpers/fixtures.js";

const test = testWith();
let observer: pg.Client;

test.beforeAll(async ({ database }) => {
  observer = new pg.Client({ connectionString: database.url });
  await observer.connect();
});
afterAll(async () => {
  await observer?.end();
});

/** Connections Waypost holds on the test database (its pool and its LISTEN session). */
async function waypostConnections(): Promise<number> {
  const result = await observer.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND application_name LIKE 'waypost%' AND pid <> pg_backend_pid()`,
  );
  return result.rows[0]!.n;
}

/** A backend leaves pg_stat_activity shortly after its client hangs up: wait for that, within a bound. */
async function expectNoWaypostConnections(): Promise<void> {
  const deadline = Date.now() + 5_000;
  let open = await waypostConnections();
  while (open > 0 && Date.now() < deadline) {
    await observer.query("SELECT pg_sleep(0.05)");
    open = await waypostConnections();
  }
  expect(open).toBe(0);
}

function config(database: TestDatabase, env: Record<string, string>) {
  return loadConfig({
    DATABASE_URL: database.url,
    HOST: "127.0.0.1",
    PORT: "0",
    WAYPOST_ADMIN_TOKEN: "test-admin-token-0123456789",
    WAYPOST_DATA_DIR: mkdtempSync(path.join(tmpdir(), "waypost-data-")),
    WAYPOST_LOG_LEVEL: "silent",
    ...env,
  });
}

test("a start that fails at its last step (the port is taken) closes the delivery loop and the pool", async ({ database }) => {
  const taken = net.createServer();
  await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
  const port = (taken.address() as net.AddressInfo).port;
  try {
    const start = startWaypost({ config: config(database, { PORT: String(port) }), logger: createLogger("silent") });
    await expect(start).rejects.toThrow(/EADDRINUSE/);
    await expectNoWaypostConnections();
  } finally {
    await new Promise((resolve) => taken.close(resolve));
  }
});

test("a start that fails after the pool is open (the admin token cannot be stored) closes the pool", async ({ database }) => {
  const dir = mkdtempSync(path.join(tmpdir(), "waypost-data-"));
  const file = path.join(dir, "not-a-directory");
  writeFileSync(file, "");
  const start = startWaypost({
    config: config(database, { WAYPOST_ADMIN_TOKEN: "", WAYPOST_DATA_DIR: path.join(file, "data") }),
    logger: createLogger("silent"),
  });
  await expect(start).rejects.toThrow(/ENOTDIR/);
  await expectNoWaypostConnections();
});

test("stop closes everything start opened", async ({ database }) => {
  const waypost = await startWaypost({ config: config(database, {}), logger: createLogger("silent") });
  expect(await waypostConnections()).toBeGreaterThan(0);
  await waypost.stop();
  await expectNoWaypostConnections();
  await expect(fetch(`${waypost.url}/healthz`)).rejects.toThrow();
});
