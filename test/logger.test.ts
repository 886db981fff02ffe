import { Writable } from "node:stream";
import pg from "pg";
import { expect } from "vitest";
import { createPool } from "../src/db/pool.js";
import { createLogger } from "../src/logger.js";
import { testWith } from "./helpers/fixtures.js";

// What a lost database connection looks like in the log: pg-pool attaches
// the whole client to the error, which must not be dumped into the line.

const test = testWith({ database: { migrated: false } });

test("an idle connection terminated by Postgres (57P01) is one short warning with the code, without the pg client", async ({
  database,
}) => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split("\n").filter(Boolean));
      done();
    },
  });
  const pool = createPool({
    connectionString: database.url,
    max: 1,
    logger: createLogger("info", sink),
    applicationName: "waypost-log-test",
  });
  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  try {
    // One idle connection in the pool, then terminated the way a stopping Postgres does.
    const { rows } = await pool.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
    const failed = new Promise((resolve) => pool.once("error", resolve));
    await admin.query("SELECT pg_terminate_backend($1)", [rows[0]!.pid]);
    await failed;
  } finally {
    await admin.end();
    await pool.end();
  }
  expect(lines).toHaveLength(1);
  const line = JSON.parse(lines[0]!) as { level: number; msg: string; err: Record<string, unknown> };
  expect(line).toMatchObject({ level: 40, msg: "an idle database connection failed; the pool replaces it" });
  expect(line.err).toMatchObject({ code: "57P01", message: "terminating connection due to administrator command" });
  expect(line.err).not.toHaveProperty("client");
  expect(lines[0]!.length).toBeLessThan(2_000);
});
