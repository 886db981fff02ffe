import { afterAll, beforeAll, expect, test } from "vitest";
import { eventually } from "../helpers/process.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

// A process that delivers listens for two topics (the deliveries', webhook
// requests') on one connection, and makes it again, for both, when the
// server kills it.
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.stop();
});

/** The backends of this database whose last statement was a LISTEN, with it. */
async function listening(): Promise<Array<{ pid: number; application_name: string; query: string }>> {
  const result = await server.pool.query(
    `SELECT pid, application_name, query FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE 'LISTEN%'`,
  );
  return result.rows;
}

test("a worker process holds one LISTEN connection for every topic, and makes it again for all of them", async () => {
  const before = await listening();
  expect(before).toHaveLength(1);
  expect(before[0]!.application_name).toBe("waypost-listen");
  await server.pool.query("SELECT pg_terminate_backend($1)", [before[0]!.pid]);
  // Made again after about a second, listening on both topics in one statement.
  const after = await eventually(async () => {
    const rows = await listening();
    return rows.length > 0 && rows[0]!.pid !== before[0]!.pid && rows;
  });
  expect(after).toHaveLength(1);
  expect(after[0]!.query).toBe('LISTEN "waypost_deliveries"; LISTEN "waypost_hooks"');
});
