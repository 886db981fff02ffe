import pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createPool, type Pool } from "../../../src/db/pool.js";
import { hooksChannel as hookWakeChannel } from "../../../src/db/queries/hook-notify.js";
import { createHookWaker } from "../../../src/ingest/hooks/hook-waker.js";
import { createLogger } from "../../../src/logger.js";
import { openTestDatabase, type TestDatabase } from "../../helpers/database.js";

let database: TestDatabase;
let pool: Pool;
let listener: pg.Client;
const payloads: string[] = [];

beforeAll(async () => {
  ({ database, pool } = await openTestDatabase());
  listener = new pg.Client({ connectionString: database.url });
  await listener.connect();
  await listener.query(`LISTEN ${hookWakeChannel}`);
  listener.on("notification", (message) => payloads.push(message.payload ?? ""));
});
afterAll(async () => {
  await listener?.end();
  await pool?.end();
  await database?.drop();
});

/** Notifications committed so far have all arrived after one round trip on the listener. */
async function received(): Promise<string[]> {
  await listener.query("SELECT 1");
  return payloads.splice(0).sort();
}

test("every source stored is announced; sources stored together share statements, each named once", async () => {
  // A long interval: the first source goes at once, the rest wait for close() to flush them in one statement.
  const waker = createHookWaker({ pool, logger: createLogger("silent"), intervalMs: 60_000 });
  waker.stored("a");
  waker.stored("b");
  waker.stored("b");
  waker.stored("c");
  await waker.close();
  expect(await received()).toEqual(["a", "b", "c"]);
});

test("a failing NOTIFY is logged, not thrown: a wake-up is a hint", async () => {
  // A database nobody listens on: port 1 refuses the connection.
  const unreachable = createPool({ connectionString: "postgres://postgres@127.0.0.1:1/none" });
  const warnings: unknown[] = [];
  const waker = createHookWaker({ pool: unreachable, logger: { warn: (...args: unknown[]) => warnings.push(args) } });
  waker.stored("x");
  await waker.close();
  await unreachable.end();
  expect(warnings).toHaveLength(1);
});
